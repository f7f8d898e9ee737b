// How the discovery client checks the server certificate: against `serverName`, else the host of `address`.
// An IP address is checked against the certificate's IP names but not sent as TLS SNI, which RFC 6066 forbids.
import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { DISCOVERY_SERVER_NAME } from '../ir/well-known.js';

// The server certificate's primary name: a harmless SNI when the target is an IP address.

export interface ServerIdentityCheck {
  channelOptions: Record<string, string>;
  verify?: { checkServerIdentity: (host: string, cert: PeerCertificate) => Error | undefined };
}

export function serverIdentity(address: string, serverName: string | undefined): ServerIdentityCheck {
  const name = serverName ?? hostOf(address);
  if (isIP(name) === 0) {
    return serverName === undefined
      ? { channelOptions: {} }
      : { channelOptions: { 'grpc.ssl_target_name_override': name, 'grpc.default_authority': name } };
  }
  return {
    channelOptions: { 'grpc.ssl_target_name_override': DISCOVERY_SERVER_NAME },
    verify: { checkServerIdentity: (_sni, cert) => checkServerIdentity(name, cert) },
  };
}

function hostOf(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) return bracketed[1]!;
  const colon = address.lastIndexOf(':');
  return colon > 0 && address.indexOf(':') === colon ? address.slice(0, colon) : address;
}

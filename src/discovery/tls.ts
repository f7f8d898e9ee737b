// TLS credentials for discovery: always TLS 1.3 at least, on both ends.
import { createSecureContext, type PeerCertificate } from 'node:tls';
import { ChannelCredentials, ServerCredentials } from '@grpc/grpc-js';

const MIN_VERSION = 'TLSv1.3';

// grpc-js's createSsl offers no minimum TLS version, so this subclass hands the TLS server its options directly.
class Tls13ServerCredentials extends ServerCredentials {
  override _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}

/** Server credentials; with `requireClientCertificate` the handshake refuses peers without a cert from the CA. */
export function createTls13ServerCredentials(
  tls: { caPem: string; certPem: string; keyPem: string },
  requireClientCertificate: boolean,
): ServerCredentials {
  return new Tls13ServerCredentials(
    {
      requestCert: requireClientCertificate,
      rejectUnauthorized: requireClientCertificate,
      minVersion: MIN_VERSION,
    },
    { ca: tls.caPem, cert: tls.certPem, key: tls.keyPem, minVersion: MIN_VERSION },
  );
}

/** Client credentials trusting only `caPem`, optionally presenting a client certificate (mutual TLS). */
export function createTls13ChannelCredentials(
  tls: { caPem: string; certPem?: string; keyPem?: string },
  verify?: { checkServerIdentity: (host: string, cert: PeerCertificate) => Error | undefined },
): ChannelCredentials {
  const context = createSecureContext({
    ca: tls.caPem,
    ...(tls.certPem !== undefined && tls.keyPem !== undefined ? { cert: tls.certPem, key: tls.keyPem } : {}),
    minVersion: MIN_VERSION,
  });
  return ChannelCredentials.createFromSecureContext(context, verify);
}

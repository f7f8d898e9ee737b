// TLS credentials for discovery's clients: always TLS 1.3 at least (the server side is tls-front.ts).
import { createSecureContext, type PeerCertificate } from 'node:tls';
import { ChannelCredentials } from '@grpc/grpc-js';

const MIN_VERSION = 'TLSv1.3';

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

// Who is on a discovery stream, and whether it may have the fleet its hello names. Mutual TLS: the client
// certificate's own fleet, nothing else. Token mode: the bearer token's identity (reviews cached, and each
// connection's uncached reviews rate-limited), then the caller's authorization.
import { status } from '@grpc/grpc-js';
import { fleetOfSubjectAltName } from '../certificates/certs.js';
import { certificateNotCurrent } from './certificate-enforcement.js';
import type { CertificatePins } from './certificate-pins.js';
import type { Hello } from './protocol.js';
import type { Call } from './server-streams.js';
import type { DiscoveryAuth, Identity, Refusal } from './server-types.js';
import { createTokenCache, type TokenCache } from './token-cache.js';

/** Why a stream is refused: the status and text its proxy sees. */
export type Verdict<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

export interface StreamAuth {
  authenticate(call: Call): Promise<Verdict<Identity>>;
  /** The identity may receive the config of the hello's fleet, as the hello's node: undefined; else why not. */
  authorize(identity: Identity, hello: Hello): Promise<Refusal | undefined>;
}

export interface StreamAuthOptions {
  tokenReviewCache: { ttlMs: number; maxEntries: number };
  /** Takes one uncached token review from the peer's connection's budget; false when it is spent. */
  allowReview(peer: string): boolean;
}

const refuse = (code: status, details: string): { ok: false; refusal: Refusal } => ({
  ok: false,
  refusal: { code, details },
});

export function createStreamAuth(auth: DiscoveryAuth, options: StreamAuthOptions): StreamAuth {
  if (auth.mode === 'mtls') {
    const pins = auth.certificates;
    return {
      authenticate: async (call) => certificateIdentity(call),
      authorize: (identity, hello) => authorizeCertificate(identity, hello, pins),
    };
  }
  const tokens = createTokenCache({
    authenticate: (token) => auth.authenticate(token),
    ...options.tokenReviewCache,
  });
  return {
    authenticate: (call) => tokenIdentity(call, tokens, options),
    async authorize(identity, hello) {
      let allowed: boolean;
      try {
        allowed = await auth.authorize(identity, { fleet: hello.fleet, node: hello.node });
      } catch (error) {
        return { code: status.INTERNAL, details: `authorization failed: ${(error as Error).message}` };
      }
      if (allowed) return undefined;
      return {
        code: status.PERMISSION_DENIED,
        details: `${identity.username} is not allowed to receive the config of fleet '${hello.fleet}' as node '${hello.node}'`,
      };
    },
  };
}

function certificateIdentity(call: Call): Verdict<Identity> {
  // The TLS handshake already refused peers without a certificate from our CA; this guards against
  // a transport that let one through anyway.
  const peer = call.getAuthContext()?.sslPeerCertificate;
  if (peer === undefined || Object.keys(peer).length === 0) {
    return refuse(status.UNAUTHENTICATED, 'a client certificate signed by the discovery CA is required');
  }
  const commonName = peer.subject?.CN;
  const fleet = fleetOfSubjectAltName(peer.subjectaltname);
  return {
    ok: true,
    value: {
      username: Array.isArray(commonName) ? commonName.join(',') : (commonName ?? ''),
      groups: [],
      extra: fleet === undefined ? {} : { fleet: [fleet] },
      certificateFingerprint: peer.fingerprint256,
    },
  };
}

/**
 * Authorized like a token: the certificate's own fleet, nothing else (DESIGN §5); with a table, only the
 * certificate the fleet's Secret holds now (or the one it renewed, within the grace).
 */
async function authorizeCertificate(
  identity: Identity,
  hello: Hello,
  pins: CertificatePins | undefined,
): Promise<Refusal | undefined> {
  const own = identity.extra.fleet?.[0];
  if (own === hello.fleet) {
    if (pins === undefined) return undefined;
    // Before the provider has read the fleets' Secrets nothing can be judged: the stream waits.
    await pins.ready();
    const fingerprint = identity.certificateFingerprint ?? '';
    return pins.acceptedUntil(own, fingerprint, Date.now()) === undefined
      ? certificateNotCurrent(own)
      : undefined;
  }
  return {
    code: status.PERMISSION_DENIED,
    details:
      own === undefined
        ? 'the client certificate names no fleet (each fleet has its own certificate)'
        : `the client certificate of fleet '${own}' may not receive the config of fleet '${hello.fleet}'`,
  };
}

async function tokenIdentity(
  call: Call,
  tokens: TokenCache,
  options: StreamAuthOptions,
): Promise<Verdict<Identity>> {
  const header = call.metadata.get('authorization')[0];
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (match === null) {
    return refuse(status.UNAUTHENTICATED, "missing bearer token: send 'authorization: Bearer <token>'");
  }
  const token = match[1]!;
  // A review the cache cannot answer costs the API server: each connection has a budget of them.
  if (!tokens.has(token) && !options.allowReview(call.getPeer())) {
    return refuse(status.RESOURCE_EXHAUSTED, 'too many token reviews on this connection; reconnect later');
  }
  try {
    return { ok: true, value: await tokens.authenticate(token) };
  } catch (error) {
    return refuse(status.UNAUTHENTICATED, `token rejected: ${(error as Error).message}`);
  }
}

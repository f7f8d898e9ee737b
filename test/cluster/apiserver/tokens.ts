// Service account tokens: ES256-signed JWTs with the claims a real API server puts in bound tokens.
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';

export const ISSUER = 'https://kubernetes.default.svc.cluster.local';

export interface TokenClaims {
  iss: string;
  sub: string;
  aud: string[];
  iat: number;
  nbf: number;
  exp: number;
  'kubernetes.io': {
    namespace: string;
    serviceaccount: { name: string; uid: string };
    pod?: { name: string; uid: string };
  };
}

export interface TokenSigner {
  sign(claims: TokenClaims): string;
  /** The claims of a token this signer issued, or an error message (signature, format). */
  decode(token: string): TokenClaims | string;
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

export function createTokenSigner(): TokenSigner {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const key: KeyObject = createPrivateKey(privateKey.export({ format: 'pem', type: 'pkcs8' }));
  const publicKey = createPublicKey(key);
  const kid = 'portico-sim';
  return {
    sign(claims) {
      const head = b64url(JSON.stringify({ alg: 'ES256', kid, typ: 'JWT' }));
      const body = b64url(JSON.stringify(claims));
      const signature = sign('sha256', Buffer.from(`${head}.${body}`), { key, dsaEncoding: 'ieee-p1363' });
      return `${head}.${body}.${b64url(signature)}`;
    },
    decode(token) {
      const parts = token.split('.');
      if (parts.length !== 3) return 'not a JWT';
      const [head, body, sig] = parts as [string, string, string];
      let header: unknown;
      let claims: unknown;
      try {
        header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8'));
        claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      } catch {
        return 'malformed JWT';
      }
      if (typeof header !== 'object' || header === null || (header as { alg?: unknown }).alg !== 'ES256') {
        return 'unexpected JWT algorithm';
      }
      const ok = verify(
        'sha256',
        Buffer.from(`${head}.${body}`),
        { key: publicKey, dsaEncoding: 'ieee-p1363' },
        Buffer.from(sig, 'base64url'),
      );
      if (!ok) return 'invalid signature';
      return claims as TokenClaims;
    },
  };
}

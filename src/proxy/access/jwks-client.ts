// A remote JSON Web Key Set, fetched by the proxy: bounded (time, size), cached for its configured time, fetched
// again when a token names a key it does not hold (at most once per REFRESH_INTERVAL_MS: a flood of forged `kid`s
// costs one fetch), and failing closed: a set that cannot be fetched verifies nothing, and no key stands in.
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { keySetProblem } from '../../ir/field-rules.js';
import { createTokenBucket, type TokenBucket } from '../../platform/token-bucket.js';

/** The largest key set read (a key set is a few KiB; more is an error, not a reason to buffer). */
const MAX_JWKS_BYTES = 256 * 1024;
const FETCH_TIMEOUT_MS = 5000;
/** One fetch for an unknown key per this long, at most. */
const REFRESH_INTERVAL_MS = 10_000;

/** A key set's JSON checked: public keys only (no symmetric key, no private member); throws why not. */
export function publicKeySet(text: string): JSONWebKeySet {
  const problem = keySetProblem(text);
  if (problem !== undefined) throw new Error(`key set ${problem}`);
  return JSON.parse(text) as JSONWebKeySet;
}

function fetchText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? httpsGet : httpGet;
    const req = get(url, { timeout: FETCH_TIMEOUT_MS, headers: { accept: 'application/json' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`key set ${url}: status ${res.statusCode}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_JWKS_BYTES) {
          req.destroy(new Error(`key set ${url}: larger than ${MAX_JWKS_BYTES} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(new Error(`key set ${url}: no answer within ${FETCH_TIMEOUT_MS} ms`)),
    );
    req.on('error', reject);
  });
}

export interface RemoteKeySet {
  /** For jwtVerify: the key for a token's header, fetching the set first when it has none or a stale one. */
  getKey: JWTVerifyGetKey;
}

export function remoteKeySet(url: string, cacheSeconds: number, now: () => number = Date.now): RemoteKeySet {
  let keys: ReturnType<typeof createLocalJWKSet> | undefined;
  let fetchedAt = 0;
  let fetching: Promise<void> | undefined;
  const refreshes: TokenBucket = createTokenBucket({ burst: 1, perSecond: 1000 / REFRESH_INTERVAL_MS });
  const refresh = (): Promise<void> => {
    fetching ??= fetchText(url)
      .then((text) => {
        keys = createLocalJWKSet(publicKeySet(text));
        fetchedAt = now();
      })
      .finally(() => {
        fetching = undefined;
      });
    return fetching;
  };
  const fresh = (): boolean => keys !== undefined && now() - fetchedAt < cacheSeconds * 1000;
  return {
    getKey: async (header, token) => {
      // Past its time the set is not used: fetched again, or nothing verifies (fail closed).
      if (!fresh()) {
        keys = undefined;
        await refresh();
      }
      try {
        return await keys!(header, token);
      } catch (error) {
        // A key it does not hold: the set may have rotated. Once per interval, not per forged token.
        if ((error as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || !refreshes.take())
          throw error;
        await refresh();
        return keys!(header, token);
      }
    },
  };
}

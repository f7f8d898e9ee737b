// JWT authentication: the token from a header, cookie or query parameter; its issuer picks the provider, whose
// keys (a key set from a Secret, or fetched: jwks-client.ts) verify it with an asymmetric algorithm only (`none`
// and HMAC are refused, so a public key can never be used as an HMAC secret); audience, expiry and not-before
// checked, then the provider's required claims; chosen claims become upstream headers.
import { createLocalJWKSet, decodeJwt, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { JwtConfig, JwtProviderConfig, TokenSource } from '../../ir/fleet-config.js';
import { publicKeySet, remoteKeySet } from './jwks-client.js';
import type { AccessRequest } from './request-view.js';
import type { AccessStep, StepOutcome } from './step.js';
import { verifiedCache } from './verified-cache.js';

/** Asymmetric JWS algorithms only. */
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
/** A claim copied to a header longer than this refuses the request rather than send it. */
const MAX_CLAIM_HEADER_BYTES = 4096;
/** Seconds of clock difference allowed on exp and nbf. */
const CLOCK_TOLERANCE_SECONDS = 30;

interface Provider {
  config: JwtProviderConfig;
  getKey: JWTVerifyGetKey;
}

function unauthenticated(reason: string): StepOutcome {
  return { allow: false, status: 401, headers: ['www-authenticate', 'Bearer'], rule: 'jwt', reason };
}

/** The token, from the first source the request has; undefined when none has one. */
export function tokenOf(req: AccessRequest, sources: readonly TokenSource[]): string | undefined {
  for (const s of sources) {
    if (s.type === 'Header') {
      const v = req.header(s.name);
      if (v === undefined) continue;
      const prefix = s.prefix ?? '';
      if (v.length > prefix.length && v.slice(0, prefix.length).toLowerCase() === prefix.toLowerCase())
        return v.slice(prefix.length).trim();
    } else if (s.type === 'Cookie') {
      for (const part of (req.header('cookie') ?? '').split(';')) {
        const eq = part.indexOf('=');
        if (eq > 0 && part.slice(0, eq).trim() === s.name) return part.slice(eq + 1).trim();
      }
    } else {
      const v = new URLSearchParams(req.search).get(s.name);
      if (v !== null && v !== '') return v;
    }
  }
  return undefined;
}

/** A claim's value as a header value, or why it cannot be one (a value that would split or forge a header). */
export function claimHeaderValue(value: unknown): { value: string } | { problem: string } | undefined {
  if (value === undefined || value === null) return undefined;
  const text = Array.isArray(value)
    ? value.map(String).join(',')
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);
  if (/[\r\n\0]/.test(text)) return { problem: 'holds CR, LF or NUL' };
  if (/[^\t\x20-\x7e\x80-\xff]/.test(text)) return { problem: 'holds a control character' };
  if (Buffer.byteLength(text) > MAX_CLAIM_HEADER_BYTES)
    return { problem: `longer than ${MAX_CLAIM_HEADER_BYTES} bytes` };
  return { value: text };
}

function requiredClaimsProblem(payload: JWTPayload, provider: JwtProviderConfig): string | undefined {
  for (const r of provider.requiredClaims) {
    const v = payload[r.name];
    const values = Array.isArray(v) ? v.map(String) : v === undefined ? [] : [String(v)];
    if (!values.some((x) => r.values.includes(x))) return `claim ${r.name} has none of the required values`;
  }
  return undefined;
}

/** What a token's signature check established: kept so that the same token is not checked again at once. */
interface Verified {
  payload: JWTPayload;
  provider: JwtProviderConfig;
  /** Until when (ms) the entry stands: the token's expiry, at most VERIFIED_KEEP_MS, at most its key set's cache time. */
  untilMs: number;
}

/** Verified tokens a step keeps (verified-cache.ts), and for how long at most. */
const VERIFIED_ENTRIES = 1024;
const VERIFIED_KEEP_MS = 300_000;
/** Longer tokens are checked every time: a thousand of them would hold megabytes. */
const VERIFIED_TOKEN_BYTES = 4096;

export interface JwtStepOptions {
  /** The clock (ms): expiry and not-before are judged by it. Default Date.now. */
  now?: () => number;
}

/**
 * The signature, issuer, audience and time checks of jose, for a token not verified recently; a Verified, or the
 * refusal. A client's repeated token costs one check until the entry lapses (a new config builds a new step).
 */
async function verify(
  token: string,
  byIssuer: ReadonlyMap<string, Provider>,
  nowMs: number,
): Promise<Verified | StepOutcome> {
  let issuer: string | undefined;
  try {
    issuer = decodeJwt(token).iss;
  } catch {
    return unauthenticated('malformed token');
  }
  const provider = issuer === undefined ? undefined : byIssuer.get(issuer);
  if (provider === undefined) return unauthenticated('unknown issuer');
  const p = provider.config;
  try {
    const { payload } = await jwtVerify(token, provider.getKey, {
      issuer: p.issuer,
      ...(p.audiences.length === 0 ? {} : { audience: p.audiences }),
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: new Date(nowMs),
      requiredClaims: ['exp'],
    });
    // A fetched key set may drop the key within its cache time: the entry does not outlive that.
    const keysMs = p.remote === undefined ? VERIFIED_KEEP_MS : p.remote.cacheSeconds * 1000;
    const expiresMs = ((payload.exp ?? 0) + CLOCK_TOLERANCE_SECONDS) * 1000;
    return { payload, provider: p, untilMs: Math.min(expiresMs, nowMs + Math.min(VERIFIED_KEEP_MS, keysMs)) };
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'ERR_JWT_INVALID';
    return unauthenticated(`token refused (${code}, provider ${p.name})`);
  }
}

/** The provider's required claims and its claim headers, on a verified payload (cached or fresh). */
function outcomeOf(verified: Verified, removeQuery: { removeQuery?: string[] }): StepOutcome {
  const { payload, provider: p } = verified;
  const missing = requiredClaimsProblem(payload, p);
  if (missing !== undefined) return { allow: false, status: 403, rule: 'jwt', reason: missing };
  const set: { name: string; value: string }[] = [];
  const remove: string[] = [];
  for (const h of p.claimHeaders) {
    const v = claimHeaderValue(payload[h.claim]);
    if (v === undefined) remove.push(h.header);
    else if ('problem' in v) return unauthenticated(`claim ${h.claim} ${v.problem}`);
    else set.push({ name: h.header, value: v.value });
  }
  return { allow: true, set, remove, ...removeQuery };
}

export function jwtStep(config: JwtConfig, options: JwtStepOptions = {}): AccessStep {
  const now = options.now ?? Date.now;
  const byIssuer = new Map<string, Provider>();
  for (const p of config.providers) {
    const getKey =
      p.remote !== undefined
        ? remoteKeySet(p.remote.url, p.remote.cacheSeconds).getKey
        : createLocalJWKSet(publicKeySet(p.keys ?? '{"keys":[]}'));
    byIssuer.set(p.issuer, { config: p, getKey });
  }
  // A token in the query is a credential like any other: the backend never sees it (an API key's likewise).
  const queryNames = config.sources.filter((s) => s.type === 'QueryParameter').map((s) => s.name);
  const removeQuery = queryNames.length === 0 ? {} : { removeQuery: queryNames };
  const verified = verifiedCache<Verified>(VERIFIED_ENTRIES);
  return {
    check: async (req, context) => {
      const token = tokenOf(req, config.sources);
      if (token === undefined) return unauthenticated('no token');
      if (token.length > config.maxTokenBytes)
        return unauthenticated(`token longer than ${config.maxTokenBytes} bytes`);
      const nowMs = now();
      let entry = verified.get(token, nowMs);
      if (entry === undefined) {
        const result = await verify(token, byIssuer, nowMs);
        if (!('payload' in result)) return result;
        entry = result;
        if (token.length <= VERIFIED_TOKEN_BYTES) verified.set(token, entry, entry.untilMs);
      }
      const outcome = outcomeOf(entry, removeQuery);
      if (outcome.allow) context.claims = entry.payload;
      return outcome;
    },
  };
}

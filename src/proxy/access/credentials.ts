// Basic auth (htpasswd: bcrypt or {SHA}) and API keys (held as SHA-256 digests, compared in constant time). A
// refusal says why in the log (no such user, wrong password, no key), never what was sent.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcryptjs';
import type { ApiKeysConfig, BasicAuthUser } from '../../ir/fleet-config.js';
import type { AccessStep, StepOutcome } from './step.js';
import { verifiedCache } from './verified-cache.js';

const BASIC_REALM = ['www-authenticate', 'Basic realm="portico", charset="UTF-8"'];

function refusedBasic(reason: string): StepOutcome {
  return { allow: false, status: 401, headers: BASIC_REALM, rule: 'basic-auth', reason };
}

/** `user:password` of an `authorization: Basic …` value; undefined when it is not one. */
export function basicCredentials(value: string | undefined): { user: string; password: string } | undefined {
  if (value === undefined || !/^basic /i.test(value)) return undefined;
  const decoded = Buffer.from(value.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Does `password` match an htpasswd hash (bcrypt, or {SHA})? */
export async function passwordMatches(password: string, hash: string): Promise<boolean> {
  if (hash.startsWith('{SHA}'))
    return sameBytes(createHash('sha1').update(password).digest(), Buffer.from(hash.slice(5), 'base64'));
  return bcrypt.compare(password, hash);
}

/** A hash no password matches, checked for an unknown user so that a miss costs what a wrong password does. */
const UNKNOWN_USER_HASH = '$2b$10$K/DTTsFHDIzQbK0F1W.u3uKXShrftkZXICOTMUf7486MN5Pw.ye1m';

/**
 * Credentials that matched, kept by a keyed digest (the key this process's own, so what is held cannot be tested
 * against guesses elsewhere): a bcrypt check costs tens of milliseconds of CPU, and a client sends the same
 * credentials with every request. Only matches are kept: a wrong password costs its check every time.
 */
const MATCHED_ENTRIES = 1024;
const MATCHED_KEEP_MS = 300_000;

export interface BasicAuthOptions {
  /** The clock (ms) of the kept matches. Default Date.now. */
  now?: () => number;
  /** The password check. Default passwordMatches. */
  matches?: (password: string, hash: string) => Promise<boolean>;
}

export function basicAuthStep(users: readonly BasicAuthUser[], options: BasicAuthOptions = {}): AccessStep {
  const now = options.now ?? Date.now;
  const check = options.matches ?? passwordMatches;
  const byUser = new Map(users.map((u) => [u.user, u.credentialDigest]));
  const matched = verifiedCache<true>(MATCHED_ENTRIES);
  const digestKey = randomBytes(32);
  // The password goes no further than the proxy.
  const pass: StepOutcome = { allow: true, remove: ['authorization'] };
  return {
    check: async (req) => {
      const credentials = basicCredentials(req.header('authorization'));
      if (credentials === undefined) return refusedBasic('no credentials');
      const id = createHmac('sha256', digestKey)
        .update(credentials.user)
        .update('\0')
        .update(credentials.password)
        .digest('base64');
      const nowMs = now();
      if (matched.get(id, nowMs) === true) return pass;
      const hash = byUser.get(credentials.user);
      const matches = await check(credentials.password, hash ?? UNKNOWN_USER_HASH);
      if (hash === undefined) return refusedBasic('unknown user');
      if (!matches) return refusedBasic(`wrong password for ${credentials.user}`);
      matched.set(id, true, nowMs + MATCHED_KEEP_MS);
      return pass;
    },
  };
}

export function apiKeyDigest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function apiKeysStep(config: ApiKeysConfig): AccessStep {
  const digests = config.credentialDigests.map((d) => Buffer.from(d, 'hex'));
  const { type, name } = config.source;
  const missing: StepOutcome = { allow: false, status: 401, rule: 'api-key', reason: 'no API key' };
  const wrong: StepOutcome = { allow: false, status: 401, rule: 'api-key', reason: 'unknown API key' };
  // The key never reaches the backend.
  const pass: StepOutcome =
    type === 'Header' ? { allow: true, remove: [name] } : { allow: true, removeQuery: [name] };
  return {
    check: (req) => {
      const key =
        type === 'Header' ? req.header(name) : (new URLSearchParams(req.search).get(name) ?? undefined);
      if (key === undefined || key === '') return missing;
      const presented = createHash('sha256').update(key).digest();
      // Every digest compared, whichever matches: the time taken says nothing about which key is near.
      let found = false;
      for (const d of digests) found = sameBytes(presented, d) || found;
      return found ? pass : wrong;
    },
  };
}

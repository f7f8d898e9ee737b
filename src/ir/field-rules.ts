// The rules a fleet config's values must follow to be sent on the wire, in one place: the translator refuses a
// route that breaks one (with a condition naming the field), the proxy's config validation applies the same
// functions, and the proxy's request path sends only what they admit. Each returns why a value is refused, or
// undefined. A value the translator accepts is therefore never one the proxy rejects.
import { isIP } from 'node:net';
import { RE2JS } from 're2js';

/** HTTPRoute timeouts beyond a day are refused (a duration can say 99999h; the proxy's timers cannot). */
export const MAX_TIMEOUT_MS = 86_400_000;

/**
 * Regular expressions run on RE2 (linear time in the input); their cost per input byte grows with the compiled
 * program, so larger programs are refused. 200 admits every pattern a route needs in practice (a UUID path is
 * about 50) while bounding a match against a 16 KiB header to milliseconds.
 */
export const MAX_REGEX_PROGRAM_SIZE = 200;

/**
 * Patterns are refused by their length before anything parses them (parsing costs time and memory by the
 * character). 1,024 is what the Gateway API lets a path or query param value be; a header value may be longer,
 * a GRPCRoute's service and method patterns make one path pattern together, and both are held to it too.
 */
export const MAX_REGEX_LENGTH = 1024;

/**
 * RFC 9110 token characters, indexed by char code or byte (codes past the table read undefined: not a token).
 * The proxy's parsers read a head's bytes with it (through proxy/wire/http-syntax.ts).
 */
export const TOKEN = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TOKEN[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TOKEN[c] = 1;
for (let c = 65; c <= 90; c++) TOKEN[c] = 1;
for (let c = 97; c <= 122; c++) TOKEN[c] = 1;

export function isToken(text: string, from: number, to: number): boolean {
  if (from >= to) return false;
  for (let i = from; i < to; i++) if (TOKEN[text.charCodeAt(i)] !== 1) return false;
  return true;
}

/** A header name: an RFC 9110 token. */
export function isHeaderName(name: string): boolean {
  return isToken(name, 0, name.length);
}

/** Field values may hold visible characters, obs-text, space and tab: one byte per character, no CR, LF, NUL, DEL. */
export function isFieldValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 32 && c !== 9) || c === 127 || c > 255) return false;
  }
  return true;
}

export function headerNameProblem(name: string): string | undefined {
  return isHeaderName(name) ? undefined : "must be a header name (letters, digits and !#$%&'*+-.^_`|~)";
}

export function headerValueProblem(value: string): string | undefined {
  return isFieldValue(value)
    ? undefined
    : 'must not contain CR, LF, NUL, DEL or other control characters (tab is allowed), or characters above U+00FF';
}

/** A path the proxy sends as the request target or a redirect's path: `/`, then visible ASCII only. */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return "must start with '/'";
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c <= 32 || c >= 127)
      return 'must not contain spaces, tabs, control or non-ASCII characters (percent-encode them)';
  }
  return undefined;
}

const AUTH_PATH_PREFIX = /^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})+$/;

/**
 * The prefix of an authorization request's path (Gateway API `HTTPAuthConfig.path`, which implementations must
 * sanitize): empty, or `/` then the CRD's characters, with no `.` or `..` segment to climb out of it.
 */
export function authPathPrefixProblem(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  if (!prefix.startsWith('/')) return "must start with '/'";
  if (!AUTH_PATH_PREFIX.test(prefix)) return 'must hold path characters only (no query, fragment or space)';
  if (prefix.split('/').some((s) => s === '.' || s === '..')) return "must not contain '.' or '..' segments";
  return undefined;
}

// Label length is not limited here: the Gateway API's hostname pattern does not limit it either.
const LABEL = '[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?';
const PRECISE_HOSTNAME = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

/** A hostname the proxy writes into Host or a Location: a DNS name, no wildcard, no port. */
export function preciseHostnameProblem(hostname: string): string | undefined {
  return hostname.length <= 253 && PRECISE_HOSTNAME.test(hostname)
    ? undefined
    : 'must be a DNS hostname without wildcard or port';
}

const WILDCARD_OR_ANY = new RegExp(`^(\\*|(\\*\\.)?${LABEL}(\\.${LABEL})*)$`);

/** A VirtualHost or TLS hostname: exact, `*.`-wildcard, or `*` (any). */
export function virtualHostnameProblem(hostname: string): string | undefined {
  return WILDCARD_OR_ANY.test(hostname) ? undefined : 'must be a DNS hostname, a *.wildcard or *';
}

const CORS_ORIGIN = new RegExp(`^https?://(\\*|(\\*\\.)?${LABEL}(\\.${LABEL})*)(?<port>:[0-9]{1,5})?$`);

/** A CORS allowed origin: `*`, or `http(s)://host[:port]` whose host may be `*` or begin with `*.` (lower case). */
export function corsOriginProblem(origin: string): string | undefined {
  if (origin === '*') return undefined;
  const m = CORS_ORIGIN.exec(origin);
  const portText = m?.groups?.port;
  const port = portText === undefined ? 80 : Number(portText.slice(1));
  return m !== null && origin === origin.toLowerCase() && port >= 1 && port <= 65535
    ? undefined
    : "must be '*' or http(s)://host[:port] in lower case, the host a DNS name, '*' or '*.' followed by one";
}

/** `host:port` (an IPv6 host in brackets), port 1 to 65535. */
export function hostPortProblem(text: string): string | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(text);
  const port = Number(m?.[2]);
  return m !== null && port >= 1 && port <= 65535 ? undefined : 'must be host:port';
}

export function timeoutProblem(ms: number): string | undefined {
  return Number.isInteger(ms) && ms >= 0 && ms <= MAX_TIMEOUT_MS ? undefined : 'must be at most 24h';
}

const compiled = new Map<string, RE2JS | string>();

/** The compiled pattern (RE2 syntax, matched against the whole value), or why it cannot run. Cached by text. */
function compileOrProblem(pattern: string): RE2JS | string {
  let hit = compiled.get(pattern);
  if (hit === undefined) {
    try {
      const re = RE2JS.compile(pattern);
      hit =
        re.programSize() > MAX_REGEX_PROGRAM_SIZE
          ? `regular expression too large (RE2 program size ${re.programSize()}, at most ${MAX_REGEX_PROGRAM_SIZE})`
          : re;
    } catch (error) {
      // RE2 has no backreferences or lookaround: patterns that need them cannot run in linear time.
      hit = `not a regular expression RE2 can run: ${(error as Error).message}`;
    }
    // Patterns come from configuration, so the cache holds what configs hold; a bound keeps churn in check.
    if (compiled.size >= 10_000) compiled.clear();
    compiled.set(pattern, hit);
  }
  return hit;
}

function lengthProblem(pattern: string): string | undefined {
  return pattern.length > MAX_REGEX_LENGTH
    ? `regular expression too long (${pattern.length} characters, at most ${MAX_REGEX_LENGTH})`
    : undefined;
}

export function regexProblem(pattern: string): string | undefined {
  const tooLong = lengthProblem(pattern);
  if (tooLong !== undefined) return tooLong;
  const c = compileOrProblem(pattern);
  return typeof c === 'string' ? c : undefined;
}

/** A whole-value matcher for a pattern regexProblem accepts; throws for one it refuses. */
export function compileRegex(pattern: string): (value: string) => boolean {
  const tooLong = lengthProblem(pattern);
  if (tooLong !== undefined) throw new Error(tooLong);
  const c = compileOrProblem(pattern);
  if (typeof c === 'string') throw new Error(c);
  return (value) => c.testExact(value);
}

/** `address/prefix`: an IPv4 address with a prefix up to 32, or an IPv6 one up to 128. */
export function cidrProblem(cidr: string): string | undefined {
  const slash = cidr.indexOf('/');
  const address = slash < 0 ? cidr : cidr.slice(0, slash);
  const prefix = slash < 0 ? '' : cidr.slice(slash + 1);
  const family = isIP(address);
  if (family === 0) return `'${address}' is not an IP address`;
  if (!/^[0-9]{1,3}$/.test(prefix) || Number(prefix) > (family === 4 ? 32 : 128))
    return `must end in /<prefix length> (0 to ${family === 4 ? 32 : 128})`;
  return undefined;
}

/** A URL the proxy fetches from (a key set, an OpenID provider): http or https, with a host, no credentials in it. */
export function fetchUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'must be an http or https URL';
  if (parsed.username !== '' || parsed.password !== '') return 'must not hold credentials';
  return undefined;
}

/** The least an OIDC cookie secret holds: the session cookies' keys are derived from it. */
export const MIN_COOKIE_SECRET_BYTES = 32;

/** An OIDC cookie secret: base64 of at least 32 bytes, or why not (never quoting it: it is secret). */
export function cookieSecretProblem(secret: string): string | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(secret)) return 'is not base64';
  if (Buffer.from(secret, 'base64').length < MIN_COOKIE_SECRET_BYTES)
    return `must be at least ${MIN_COOKIE_SECRET_BYTES} bytes (base64)`;
  return undefined;
}

/** A JSON Web Key Set of public keys only (RSA, EC, OKP; no symmetric key, no private member), or why not. */
export function keySetProblem(text: string): string | undefined {
  let parsed: { keys?: unknown };
  try {
    parsed = JSON.parse(text) as { keys?: unknown };
  } catch {
    return 'is not JSON';
  }
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray(parsed.keys))
    return 'is not a JSON Web Key Set (no keys list)';
  for (const [i, key] of parsed.keys.entries()) {
    const k = (typeof key === 'object' && key !== null ? key : {}) as Record<string, unknown>;
    if (k.kty !== 'RSA' && k.kty !== 'EC' && k.kty !== 'OKP') return `keys[${i}]: kty must be RSA, EC or OKP`;
    for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'])
      if (secret in k) return `keys[${i}]: holds private key material ('${secret}')`;
  }
  return undefined;
}

/** An htpasswd hash the proxy can check: bcrypt (`$2a$`, `$2b$`, `$2y$`) or `{SHA}` (base64 SHA-1). */
export function passwordHashProblem(hash: string): string | undefined {
  if (/^\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}$/.test(hash)) return undefined;
  if (/^\{SHA\}[A-Za-z0-9+/]{27}=$/.test(hash)) return undefined;
  return 'is not a bcrypt or {SHA} hash (other htpasswd formats are not supported)';
}

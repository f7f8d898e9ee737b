// Header handling between client and upstream: hop-by-hop stripping, the headers Portico adds, and the
// Gateway API header modifier filters.
import type { HeaderModifier } from '../../ir/fleet-config.js';
import {
  believedForwardedFor,
  clientHeaderRule,
  DROP,
  type ForwardingFacts,
  forwardingHeaders,
} from './forwarded-headers.js';

export type HeaderMap = Record<string, string | string[]>;

// The one place the names of connection-level fields are written: every other list derives from these.

/** Connection-specific fields HTTP/2 forbids (RFC 9113 §8.2.2; `te` aside, allowed as `trailers`). */
export const HTTP2_CONNECTION_SPECIFIC: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
]);

/** Fields that describe one connection (RFC 9110 §7.6.1) or the proxy hop: never forwarded either way. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  ...HTTP2_CONNECTION_SPECIFIC,
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'http2-settings',
]);

/** Fields Node refuses to send over HTTP/2: the connection-specific ones, and `te` and `http2-settings`. */
export const NOT_SENT_OVER_HTTP2: ReadonlySet<string> = new Set([
  ...HTTP2_CONNECTION_SPECIFIC,
  'te',
  'http2-settings',
]);

/**
 * Fields Node refuses to send more than once in an HTTP/2 header block (it throws, which out of an event handler
 * ends the process). Node keeps the first of each when it receives a block; so does the proxy when it sends one.
 */
export const SINGLE_VALUE_OVER_HTTP2: ReadonlySet<string> = new Set([
  'access-control-allow-credentials',
  'access-control-max-age',
  'access-control-request-method',
  'age',
  'authorization',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-md5',
  'content-range',
  'content-type',
  'date',
  'dnt',
  'etag',
  'expires',
  'from',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'range',
  'referer',
  'retry-after',
  'tk',
  'upgrade-insecure-requests',
  'user-agent',
  'x-content-type-options',
]);

/** Connection may not list these: framing and Host are the proxy's to write, never a client's to remove. */
const NOT_LISTABLE = new Set(['content-length', 'transfer-encoding', 'host']);

/**
 * Header names the Connection header lists (hop-by-hop too), lower case; undefined when none. The usual
 * `keep-alive` and `close` are connection options, dropped as hop-by-hop anyway: no set for them.
 */
export function connectionListed(raw: string[]): Set<string> | undefined {
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 10 || name.toLowerCase() !== 'connection') continue;
    const value = raw[i + 1]!;
    if (value === 'keep-alive' || value === 'close' || value === 'Keep-Alive' || value === 'Close') continue;
    for (const token of value.split(',')) {
      const t = token.trim().toLowerCase();
      if (t === '' || t === 'keep-alive' || t === 'close' || NOT_LISTABLE.has(t)) continue;
      listed ??= new Set();
      listed.add(t);
    }
  }
  return listed;
}

/** Which name lengths occur in HOP_BY_HOP or `drop`: only names of those lengths need a lower-case look. */
const lengthsCache = new WeakMap<ReadonlySet<string>, Uint8Array>();
function candidateLengths(drop: ReadonlySet<string>): Uint8Array {
  let lengths = lengthsCache.get(drop);
  if (lengths === undefined) {
    lengths = new Uint8Array(256);
    for (const name of [...HOP_BY_HOP, ...drop]) lengths[name.length] = 1;
    lengthsCache.set(drop, lengths);
  }
  return lengths;
}

/** Raw header lines (name, value, ...) without hop-by-hop headers, those Connection lists, and `drop`. */
export function hopByHopFree(raw: string[], drop: ReadonlySet<string>): string[] {
  const listed = connectionListed(raw);
  const lengths = candidateLengths(drop);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (listed !== undefined || (name.length < 256 && lengths[name.length] === 1)) {
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower) || drop.has(lower) || listed?.has(lower)) continue;
    }
    out.push(name, raw[i + 1]!);
  }
  return out;
}

/**
 * An empty header map without a prototype: a field named `__proto__`, `constructor` or `hasOwnProperty` is
 * then a key like any other, never an inherited member read as a value or a prototype replaced on assignment.
 */
export function emptyHeaderMap(): HeaderMap {
  return Object.create(null) as HeaderMap;
}

function toMap(lines: string[]): HeaderMap {
  const out = emptyHeaderMap();
  for (let i = 0; i < lines.length; i += 2) {
    const name = lines[i]!.toLowerCase();
    const value = lines[i + 1]!;
    const existing = out[name];
    if (existing === undefined) out[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[name] = [existing, value];
  }
  return out;
}

const NOTHING_MORE: ReadonlySet<string> = new Set();

/**
 * Request headers toward the upstream, lower-case names, without hop-by-hop ones and the forwarding headers a
 * client may not set (forwarded-headers.ts); x-forwarded-for and x-request-id stay for addForwardingHeaders.
 */
export function endToEndHeaders(raw: string[]): HeaderMap {
  const headers = toMap(hopByHopFree(raw, NOTHING_MORE));
  for (const name in headers) if (clientHeaderRule(name) === DROP) delete headers[name];
  return headers;
}

/** The proxy sets these on every forwarded response itself. */
export const DROP_FROM_RESPONSE: ReadonlySet<string> = new Set(['server', 'x-portico-upstream-service-time']);

export function responseHeaders(raw: string[]): HeaderMap {
  return toMap(hopByHopFree(raw, DROP_FROM_RESPONSE));
}

export function applyHeaderModifier(headers: HeaderMap, modifier: HeaderModifier): void {
  for (const { name, value } of modifier.set) headers[name] = value;
  for (const { name, value } of modifier.add) {
    const existing = headers[name];
    // Gateway API: add appends to an existing value (`foo: bar` + `baz` → `foo: bar,baz`).
    if (existing === undefined) headers[name] = value;
    else headers[name] = `${Array.isArray(existing) ? existing.join(',') : existing},${value}`;
  }
  for (const name of modifier.remove) delete headers[name];
}

const IPV4_PRIVATE = [/^10\./, /^127\./, /^192\.168\./, /^172\.(1[6-9]|2\d|3[01])\./, /^169\.254\./];

/** Loopback, RFC 1918, link-local and unique-local addresses count as internal clients. */
export function isInternalAddress(address: string): boolean {
  const ip = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (ip.includes(':')) {
    const lower = ip.toLowerCase();
    return lower === '::1' || lower.startsWith('fc') || lower.startsWith('fd') || lower.startsWith('fe80:');
  }
  return IPV4_PRIVATE.some((re) => re.test(ip));
}

export function clientIp(address: string | undefined): string {
  if (address === undefined) return '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/** Sets the headers Portico sends toward backends (docs/architecture.md) by the rules of forwarded-headers.ts. */
export function addForwardingHeaders(
  headers: HeaderMap,
  facts: ForwardingFacts,
  trustedChain: string | undefined,
  requestId: () => string,
): void {
  const xff = headers['x-forwarded-for'];
  const ids = headers['x-request-id'];
  const sent = xff === undefined ? undefined : Array.isArray(xff) ? xff.join(', ') : xff;
  const clientForwardedFor = believedForwardedFor(trustedChain, sent);
  const clientIds = ids === undefined ? [] : Array.isArray(ids) ? ids : [ids];
  const ours = forwardingHeaders(facts, clientForwardedFor, clientIds, requestId);
  for (let i = 0; i < ours.length; i += 2) headers[ours[i]!] = ours[i + 1]!;
}

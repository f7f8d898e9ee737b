// Trailer fields relayed between client and upstream, both ways: which ones may travel after a body, and how
// the chunked coding's last chunk carries them. RFC 9110 §6.5.1 lets a recipient drop any trailer; these are
// dropped because they only mean something before the content (framing, routing, authentication, content
// format), are hop-by-hop (headers.ts; HTTP/2 forbids most), or are the proxy's own forwarding fields, which a
// backend that merges trailers into the header section would otherwise take from the client.
import { clientHeaderRule, DROP } from './forwarded-headers.js';
import { HOP_BY_HOP } from './headers.js';
import { isHeaderName, isValidFieldValue } from './http-syntax.js';

/** At most this many trailer fields go along; more is not a real client or backend. */
export const MAX_TRAILERS = 64;

const NOT_FORWARDED: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP,
  'content-length',
  'content-encoding',
  'content-type',
  'content-range',
  'host',
  'authorization',
  'www-authenticate',
  'cookie',
  'set-cookie',
  'expect',
  'max-forwards',
  'x-forwarded-for',
  'x-request-id',
]);

/**
 * The trailer lines (name, value, ...) that may be relayed, names in lower case; undefined when none may.
 * Pseudo-headers, bad names or values and fields past MAX_TRAILERS are left out.
 */
export function forwardableTrailers(lines: readonly string[]): string[] | undefined {
  let out: string[] | undefined;
  for (let i = 0; i < lines.length && i < 2 * MAX_TRAILERS; i += 2) {
    const name = lines[i]!.toLowerCase();
    const value = lines[i + 1]!;
    if (NOT_FORWARDED.has(name) || clientHeaderRule(name) === DROP) continue;
    if (!isHeaderName(name) || !isValidFieldValue(value)) continue;
    out ??= [];
    out.push(name, value);
  }
  return out;
}

export const LAST_CHUNK = '0\r\n\r\n';

/** The chunked coding's last chunk, with the trailer lines (already filtered) when there are any. */
export function lastChunk(trailers: readonly string[] | undefined): string {
  if (trailers === undefined || trailers.length === 0) return LAST_CHUNK;
  let out = '0\r\n';
  for (let i = 0; i < trailers.length; i += 2) out += `${trailers[i]}: ${trailers[i + 1]}\r\n`;
  return `${out}\r\n`;
}

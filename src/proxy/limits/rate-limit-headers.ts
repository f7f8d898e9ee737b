// The answer to a request over a rate limit: 429 with retry-after and the IETF RateLimit-Policy / RateLimit
// fields (draft-ietf-httpapi-ratelimit-headers, structured-field form: a list of one item, the policy's name as
// an sf-string with `q` quota and `w` window in seconds, and `r` remaining and `t` seconds to reset).
import type { RateRefusal } from './rate-limiter.js';

/** An RFC 8941 sf-string: printable ASCII, `"` and `\` escaped; other characters become `?`. */
export function structuredString(text: string): string {
  let out = '"';
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else out += c >= 0x20 && c <= 0x7e ? ch : '?';
  }
  return `${out}"`;
}

/** Header lines (name, value, ...) of a 429 for `refusal`. */
export function rateLimitedLines(refusal: RateRefusal): string[] {
  const seconds = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
  const name = structuredString(refusal.rule.name);
  return [
    'retry-after',
    String(seconds),
    'ratelimit-policy',
    `${name};q=${refusal.rule.limit};w=${refusal.rule.periodSeconds}`,
    'ratelimit',
    `${name};r=0;t=${seconds}`,
  ];
}

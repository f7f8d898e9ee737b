// The IETF RateLimit-Policy / RateLimit fields (draft-ietf-httpapi-ratelimit-headers, structured-field form: a
// list of one item, the policy's name as an sf-string with `q` quota and `w` window in seconds, and `r` remaining
// and `t` seconds to reset): on a 429 with retry-after, and on an allowed response for its tightest rule.
import type { RateRefusal, RateStanding } from './rate-limiter.js';

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

/** Header lines (name, value, ...) of an allowed response: where the tightest rule stands. */
export function rateStandingLines(standing: RateStanding): string[] {
  const name = structuredString(standing.rule.name);
  return [
    'ratelimit-policy',
    `${name};q=${standing.rule.limit};w=${standing.rule.periodSeconds}`,
    'ratelimit',
    `${name};r=${Math.floor(standing.remaining)};t=${Math.ceil(standing.resetMs / 1000)}`,
  ];
}

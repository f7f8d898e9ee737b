// x-request-id values for requests that come without one: UUID-shaped (version 4 and variant bits set) and
// unique per process, a random 74-bit prefix drawn at start plus a 48-bit counter. Formatting a counter
// costs a fraction of a random UUID per request; the id is for tracing, not a secret.
import { randomBytes } from 'node:crypto';

const COUNTER_LIMIT = 2 ** 48;
let prefix = '';
let counter = COUNTER_LIMIT;

function newPrefix(): string {
  const hex = randomBytes(10).toString('hex');
  // 8-4-4-4 hex digits: the third group starts with the version (4), the fourth with the variant (8..b).
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-`;
}

export function nextRequestId(): string {
  if (counter >= COUNTER_LIMIT) {
    prefix = newPrefix();
    counter = 0;
  }
  const n = (counter++).toString(16);
  return prefix + '000000000000'.slice(n.length) + n;
}

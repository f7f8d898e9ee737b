// HTTP/1.1 field syntax (RFC 9110 §5, §8.6) shared by the request parser and the upstream response parser.

// Token and field-value rules are the fleet config's own (what a config may hold is what the wire may carry).
export { isFieldValue as isValidFieldValue, isHeaderName, isToken, TOKEN } from '../../ir/field-rules.js';

/** Whether a comma-separated list (Connection, Transfer-Encoding) holds `token` (lower case). */
export function hasToken(list: string, token: string): boolean {
  for (const part of list.split(',')) if (part.trim().toLowerCase() === token) return true;
  return false;
}

/** A content-length value (a list of identical values is allowed, RFC 9110 §8.6); -1 if invalid. */
export function parseContentLength(value: string): number {
  // The usual single number, read without splitting.
  let single = 0;
  let k = 0;
  for (; k < value.length && k <= 15; k++) {
    const c = value.charCodeAt(k);
    if (c < 48 || c > 57) break;
    single = single * 10 + (c - 48);
  }
  if (k === value.length && k > 0 && k <= 15) return single;
  let length = -1;
  for (const part of value.split(',')) {
    const digits = part.trim();
    if (digits.length === 0 || digits.length > 15) return -1;
    for (let i = 0; i < digits.length; i++) {
      const c = digits.charCodeAt(i);
      if (c < 48 || c > 57) return -1;
    }
    const n = Number(digits);
    if (length !== -1 && n !== length) return -1;
    length = n;
  }
  return length;
}

/** Whether `text` is `lower` (lower case) in any ASCII case, without making a lower-case copy. */
export function equalsLowerCase(text: string, lower: string): boolean {
  if (text.length !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    const c = text.charCodeAt(i);
    const l = lower.charCodeAt(i);
    if (c !== l && (c < 65 || c > 90 || c + 32 !== l)) return false;
  }
  return true;
}

/** A header name or value that cannot be sent (set from configuration, or a backend's that HTTP/2 cannot carry). */
export class InvalidHeaderError extends Error {}

// HTTP/1.1 field syntax (RFC 9110 §5, §8.6) shared by the request parser and the upstream response parser.

const SP = 32;
const HTAB = 9;

// Token and field-value rules are the fleet config's own (what a config may hold is what the wire may carry).
export { isFieldValue as isValidFieldValue, isHeaderName, isToken } from '../ir/field-rules.js';

/** Header names compared without a lower-case copy (`name` must be lower case). */
export function nameIs(text: string, from: number, to: number, name: string): boolean {
  if (to - from !== name.length) return false;
  for (let i = 0; i < name.length; i++) {
    if ((text.charCodeAt(from + i) | 0x20) !== name.charCodeAt(i)) return false;
  }
  return true;
}

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

/**
 * A chunk-size line without its CRLF: hex digits, then optionally BWS and `;extensions` (ignored, but no
 * control bytes: a bare CR there could end the line for another parser). -1 if malformed, including
 * whitespace with no extension after it, which RFC 9112 §7.1.1 does not allow and parsers read differently.
 */
export function parseChunkSize(line: string): number {
  let size = 0;
  let digits = 0;
  let i = 0;
  for (; i < line.length; i++) {
    const c = line.charCodeAt(i);
    let v: number;
    if (c >= 48 && c <= 57) v = c - 48;
    else if (c >= 97 && c <= 102) v = c - 87;
    else if (c >= 65 && c <= 70) v = c - 55;
    else break;
    if (++digits > 12) return -1;
    size = size * 16 + v;
  }
  if (digits === 0) return -1;
  if (i === line.length) return size;
  while (i < line.length && (line.charCodeAt(i) === SP || line.charCodeAt(i) === HTAB)) i++;
  if (i === line.length || line.charCodeAt(i) !== 59) return -1;
  for (let k = i + 1; k < line.length; k++) {
    const c = line.charCodeAt(k);
    if ((c < SP && c !== HTAB) || c === 127) return -1;
  }
  return size;
}

// HTTP/2 header blocks as Node's objects and as the flat lines (name, value, ...) the rest of the proxy uses.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import { NOT_SENT_OVER_HTTP2, SINGLE_VALUE_OVER_HTTP2 } from './headers.js';
import { InvalidHeaderError, isHeaderName, isValidFieldValue } from './http-syntax.js';

/** Header fields of an HTTP/2 block as flat lines (name, value, ...), pseudo-headers left out. */
export function headerLines(headers: IncomingHttpHeaders): string[] {
  const lines: string[] = [];
  for (const name in headers) {
    if (name.charCodeAt(0) === 58) continue; // ':'
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === 'string') lines.push(name, value);
    else for (const v of value) lines.push(name, v);
  }
  return lines;
}

/**
 * Header lines as an HTTP/2 header object (`first`'s fields, then the lines'): lower-case names, repeats as
 * lists. A new object without a prototype, so a field named `__proto__` or `constructor` is a key like any other.
 */
export function headerObject(
  lines: string[],
  first: OutgoingHttpHeaders,
  validate: boolean,
): OutgoingHttpHeaders {
  const into = Object.assign(Object.create(null) as OutgoingHttpHeaders, first);
  for (let i = 0; i < lines.length; i += 2) {
    const name = lines[i]!.toLowerCase();
    const value = lines[i + 1]!;
    if (NOT_SENT_OVER_HTTP2.has(name)) continue;
    if (validate && (!isHeaderName(name) || !isValidFieldValue(value)))
      throw new InvalidHeaderError(`invalid character in header ${JSON.stringify(name)}`);
    const existing = into[name];
    if (existing === undefined) into[name] = value;
    else if (SINGLE_VALUE_OVER_HTTP2.has(name)) continue;
    else if (Array.isArray(existing)) existing.push(value);
    else into[name] = [String(existing), value];
  }
  return into;
}

// Parses an upstream HTTP/1.x response head (status line and header lines) and decides how its body is
// framed (RFC 9112 §6.3). Strict: anything a browser-facing server must not relay is an error (→ 502).
import { headerLine, readHeaderLine } from './header-line.js';
import { hasToken, nameIs, parseContentLength } from './http-syntax.js';

/** The body runs until the upstream closes the connection. */
export const UNTIL_CLOSE = -1;
/** The body is chunked. */
export const CHUNKED = -2;

export interface ResponseHead {
  status: number;
  /** Header lines as received: name, value, name, value, ... (values without surrounding whitespace). */
  rawHeaders: string[];
  /** Body bytes, or UNTIL_CLOSE, or CHUNKED. */
  bodyLength: number;
  /** The connection may carry another request once this response is read. */
  keepAlive: boolean;
}

const SP = 32;
/** Reused for every header line of every head: parsing a head is synchronous. */
const LINE = headerLine();

/**
 * `text`: the head in latin1, up to but excluding the blank line. `noBody`: the request was HEAD.
 * Returns the parsed head, or an error message.
 */
export function parseResponseHead(text: string, noBody: boolean): ResponseHead | string {
  const firstEnd = text.indexOf('\r\n');
  const lineEnd = firstEnd === -1 ? text.length : firstEnd;
  // `HTTP/1.x NNN[ reason]`
  if (lineEnd < 12 || !text.startsWith('HTTP/1.')) return 'malformed status line';
  const minor = text.charCodeAt(7);
  if ((minor !== 48 && minor !== 49) || text.charCodeAt(8) !== SP) return 'unsupported HTTP version';
  let status = 0;
  for (let i = 9; i < 12; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return 'malformed status code';
    status = status * 10 + (c - 48);
  }
  if (status < 100 || (lineEnd > 12 && text.charCodeAt(12) !== SP)) return 'malformed status line';

  const rawHeaders: string[] = [];
  let contentLength = -1;
  let chunked = false;
  let transferEncoding = false;
  let close = minor === 48;
  let pos = firstEnd === -1 ? text.length : firstEnd + 2;
  while (pos < text.length) {
    const malformed = readHeaderLine(text, pos, LINE);
    if (malformed !== undefined) return malformed;
    const { colon, value } = LINE;
    if (nameIs(text, pos, colon, 'content-length')) {
      const n = parseContentLength(value);
      if (n < 0 || (contentLength !== -1 && n !== contentLength)) return 'invalid content-length';
      contentLength = n;
    } else if (nameIs(text, pos, colon, 'transfer-encoding')) {
      transferEncoding = true;
      // Only the final coding decides the framing.
      const codings = value.split(',');
      chunked = codings[codings.length - 1]!.trim().toLowerCase() === 'chunked';
    } else if (nameIs(text, pos, colon, 'connection')) {
      if (value === 'keep-alive' || value === 'Keep-Alive') {
        if (minor === 48) close = false;
      } else if (hasToken(value, 'close')) close = true;
      else if (minor === 48 && hasToken(value, 'keep-alive')) close = false;
    }
    rawHeaders.push(text.slice(pos, colon), value);
    pos = LINE.next;
  }

  let bodyLength: number;
  if (noBody || status < 200 || status === 204 || status === 304) bodyLength = 0;
  else if (transferEncoding) {
    bodyLength = chunked ? CHUNKED : UNTIL_CLOSE;
    // Both framings present: a smuggling attempt or a broken upstream; do not reuse the connection.
    if (contentLength !== -1) close = true;
  } else if (contentLength !== -1) bodyLength = contentLength;
  else bodyLength = UNTIL_CLOSE;
  if (bodyLength === UNTIL_CLOSE) close = true;
  return { status, rawHeaders, bodyLength, keepAlive: !close };
}

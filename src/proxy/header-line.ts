// One header line of an HTTP/1.x head (RFC 9112 §5.1), read where it stands in the head's text: the client
// request parser and the upstream response parser walk their header lines with it, each then judging the
// names it cares about. It fills a record its caller reuses, so reading a line allocates only its value.
import { isToken, isValidFieldValue } from './http-syntax.js';

/** Where the parts of the line last read are in the head's text. */
export interface HeaderLine {
  /** Where the name ends (it starts where reading began). */
  colon: number;
  /** The value without the whitespace around it. */
  value: string;
  /** Where the next line starts (after this line's CRLF). */
  next: number;
}

export function headerLine(): HeaderLine {
  return { colon: 0, value: '', next: 0 };
}

const SP = 32;
const HTAB = 9;

/**
 * Reads the header line starting at `pos` of `text` (a head without its blank line) into `line`. Returns why
 * the line is malformed, or undefined.
 */
export function readHeaderLine(text: string, pos: number, line: HeaderLine): string | undefined {
  let end = text.indexOf('\r\n', pos);
  if (end === -1) end = text.length;
  const colon = text.indexOf(':', pos);
  if (colon === -1 || colon > end) return 'malformed header line';
  // A name must be a token: this also refuses obs-fold continuation lines and whitespace before the colon.
  if (!isToken(text, pos, colon)) return 'malformed header name';
  let vFrom = colon + 1;
  let vTo = end;
  while (vFrom < vTo && (text.charCodeAt(vFrom) === SP || text.charCodeAt(vFrom) === HTAB)) vFrom++;
  while (vTo > vFrom && (text.charCodeAt(vTo - 1) === SP || text.charCodeAt(vTo - 1) === HTAB)) vTo--;
  const value = text.slice(vFrom, vTo);
  if (!isValidFieldValue(value)) return 'invalid header value';
  line.colon = colon;
  line.value = value;
  line.next = end + 2;
  return undefined;
}

// Parses an upstream HTTP/1.x response head (status line and header lines) and decides how its body is
// framed (RFC 9112 §6.3). Strict: anything a browser-facing server must not relay is an error (→ 502).
// The head is read on its bytes and kept as text with where each line is: a response passed on unchanged is
// forwarded as runs of its own lines (passThrough), without a string per name and value; rawHeaders makes
// those only when someone asks (header filters, HTTP/2 clients).
import {
  bytesAre,
  digitsValue,
  headerLine,
  latin1Bytes,
  nameIs,
  readHeaderLine,
  VALUE,
} from './header-line.js';
import { knownName, nameFlags } from './header-names.js';
import { DROP_FROM_RESPONSE, HOP_BY_HOP } from './headers.js';
import { hasToken, parseContentLength } from './http-syntax.js';

/** The body runs until the upstream closes the connection. */
export const UNTIL_CLOSE = -1;
/** The body is chunked. */
export const CHUNKED = -2;

/** What a forwarding handler gets of a response head from an upstream, whatever its protocol. */
export interface UpstreamHead {
  /** Header lines as received: name, value, name, value, ... (values without surrounding whitespace). */
  readonly rawHeaders: string[];
}

/** The header lines an HTTP/1.1 response passes on unchanged, as text, and what the client's framing needs. */
export interface PassThrough {
  /** Whole header lines, each ending in CRLF; hop-by-hop and the proxy's own fields left out. */
  lines: string;
  /** A content-length line is among them. */
  hasLength: boolean;
  /** A date line is among them. */
  hasDate: boolean;
}

const SP = 32;
const HTAB = 9;
const CR = 13;
const LF = 10;
/** Reused for every header line of every head: parsing a head is synchronous. */
const LINE = headerLine();

/** A response's header lines that never go on as they came: hop-by-hop, and the fields the proxy sets itself. */
const NOT_PASSED = nameFlags([...HOP_BY_HOP, ...DROP_FROM_RESPONSE]);
const HTTP_1 = latin1Bytes('HTTP/1.');
const KEEP_ALIVE_VALUE = latin1Bytes('keep-alive');
const CLOSE_VALUE = latin1Bytes('close');

/** A parsed response head: status, framing, and its header lines as text with those not passed on marked. */
export class ResponseHead implements UpstreamHead {
  private raw: string[] | undefined = undefined;
  constructor(
    readonly status: number,
    /** Body bytes, or UNTIL_CLOSE, or CHUNKED. */
    readonly bodyLength: number,
    /** The connection may carry another request once this response is read. */
    readonly keepAlive: boolean,
    /** The head as latin1 text, from the status line to the CRLF of its last header line. */
    private readonly text: string,
    /** Where the first header line starts in `text`. */
    private readonly firstLine: number,
    /** Start and end (after its CRLF) in `text` of each run of lines not passed on (NOT_PASSED), in order. */
    private readonly cuts: number[] | undefined,
    private readonly hasLength: boolean,
    private readonly hasDate: boolean,
    /** A Connection header names other fields (hop-by-hop for this connection): passThrough cannot be used. */
    readonly listsFields: boolean,
  ) {}

  /** Made from the text on first use (the head was validated when parsed). */
  get rawHeaders(): string[] {
    if (this.raw === undefined) this.raw = headerList(this.text, this.firstLine);
    return this.raw;
  }

  /**
   * The lines to pass on as they came: all but the hop-by-hop fields and those the proxy sets itself, in
   * runs of the head's own text. Undefined when a Connection header names fields (use rawHeaders instead).
   */
  passThrough(): PassThrough | undefined {
    if (this.listsFields) return undefined;
    const { text, cuts } = this;
    let lines = '';
    let from = this.firstLine;
    for (let i = 0; cuts !== undefined && i < cuts.length; i += 2) {
      if (cuts[i]! > from) lines += text.slice(from, cuts[i]);
      from = cuts[i + 1]!;
    }
    if (from < text.length) lines += text.slice(from);
    return { lines, hasLength: this.hasLength, hasDate: this.hasDate };
  }
}

/** Name, value, ... of valid header lines in `text` from `from` (values without the SP/HTAB around them). */
function headerList(text: string, from: number): string[] {
  const raw: string[] = [];
  let pos = from;
  while (pos < text.length) {
    let end = text.indexOf('\r\n', pos);
    if (end < 0) end = text.length;
    const colon = text.indexOf(':', pos);
    let v = colon + 1;
    let e = end;
    while (v < e && (text.charCodeAt(v) === SP || text.charCodeAt(v) === HTAB)) v++;
    while (e > v && (text.charCodeAt(e - 1) === SP || text.charCodeAt(e - 1) === HTAB)) e--;
    raw.push(text.slice(pos, colon), text.slice(v, e));
    pos = end + 2;
  }
  return raw;
}

/** `text`: the head in latin1, up to but excluding the blank line. `noBody`: the request was HEAD. */
export function parseResponseHead(text: string, noBody: boolean): ResponseHead | string {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 255) return 'invalid header value';
  return parseResponseHeadBytes(Buffer.from(`${text}\r\n\r\n`, 'latin1'), 0, text.length, noBody);
}

/** Where the status line starting at `from` ends (its CR, or `end`); -1 when a byte in it may not be there. */
function statusLineEnd(bytes: Uint8Array, from: number, end: number): number {
  let i = from;
  while (i < end && VALUE[bytes[i]!] === 1) i++;
  return i === end || (bytes[i] === CR && bytes[i + 1] === LF) ? i : -1;
}

/** The status line `HTTP/1.x NNN[ reason]` ending at `lineEnd`: its status, or an error message. */
function statusOf(
  bytes: Uint8Array,
  from: number,
  lineEnd: number,
): { status: number; minor: number } | string {
  if (lineEnd < 0) return 'malformed status line';
  if (lineEnd - from < 12 || !bytesAre(bytes, from, from + 7, HTTP_1)) return 'malformed status line';
  const minor = bytes[from + 7]!;
  if ((minor !== 48 && minor !== 49) || bytes[from + 8] !== SP) return 'unsupported HTTP version';
  let status = 0;
  for (let i = from + 9; i < from + 12; i++) {
    const c = bytes[i]!;
    if (c < 48 || c > 57) return 'malformed status code';
    status = status * 10 + (c - 48);
  }
  if (status < 100 || (lineEnd - from > 12 && bytes[from + 12] !== SP)) return 'malformed status line';
  return { status, minor: minor - 48 };
}

/**
 * The head in `bytes` [from, end): up to but excluding the blank line, which follows in `bytes` (CRLF CRLF at
 * `end`). `noBody`: the request was HEAD. Returns the parsed head, or an error message.
 */
export function parseResponseHeadBytes(
  bytes: Buffer,
  from: number,
  end: number,
  noBody: boolean,
  /** The bytes from `from` as latin1 text, when the caller has made it (to `end` + 2 at least). */
  given?: string,
): ResponseHead | string {
  const lineEnd = statusLineEnd(bytes, from, end);
  const line = statusOf(bytes, from, lineEnd);
  if (typeof line === 'string') return line;
  const { status, minor } = line;
  let cuts: number[] | undefined;
  let hasLength = false;
  let hasDate = false;
  let contentLength = -1;
  let chunked = false;
  let transferEncoding = false;
  let close = minor === 0;
  let listsFields = false;
  // The status line's CRLF is followed by the first header line, or by the blank line after `end`.
  const firstLine = lineEnd + 2;
  let pos = firstLine;
  while (pos < end) {
    const malformed = readHeaderLine(bytes, pos, end, LINE);
    if (malformed !== undefined) return malformed;
    const known = knownName(bytes, pos, LINE.colon);
    if (known !== undefined) {
      const name = known.name;
      if (NOT_PASSED[known.id] === 1)
        cuts = cut(cuts, pos - from, (LINE.next < end ? LINE.next : end + 2) - from);
      if (name === 'content-length') {
        contentLength = lengthOf(bytes, contentLength);
        if (contentLength === -2) return 'invalid content-length';
        hasLength = true;
      } else if (name === 'date') hasDate = true;
      else if (name === 'transfer-encoding') {
        transferEncoding = true;
        // Only the final coding decides the framing.
        const codings = bytes.toString('latin1', LINE.valueStart, LINE.valueEnd).split(',');
        chunked = codings[codings.length - 1]!.trim().toLowerCase() === 'chunked';
      } else if (name === 'connection') {
        const options = connectionOptions(bytes, minor);
        if (options & CLOSE) close = true;
        else if (options & KEEP_ALIVE) close = false;
        if (options & LISTS_FIELDS) listsFields = true;
      }
    }
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
  // The text runs to the CRLF of the last line: the caller's bytes go on with the blank line after `end`.
  const length = end + 2 - from;
  const text =
    given === undefined
      ? bytes.toString('latin1', from, end + 2)
      : given.length === length
        ? given
        : given.slice(0, length);
  return new ResponseHead(
    status,
    bodyLength,
    !close,
    text,
    firstLine - from,
    cuts,
    hasLength,
    hasDate,
    listsFields,
  );
}

/** `cuts` with [start, end) cut too (joined to the last cut when they touch). */
function cut(cuts: number[] | undefined, start: number, end: number): number[] {
  if (cuts === undefined) return [start, end];
  if (cuts[cuts.length - 1] === start) cuts[cuts.length - 1] = end;
  else cuts.push(start, end);
  return cuts;
}

/** The Content-Length at LINE, checked against one seen before (`previous`, -1 if none); -2 when invalid. */
function lengthOf(bytes: Buffer, previous: number): number {
  let n = digitsValue(bytes, LINE.valueStart, LINE.valueEnd);
  if (n === -2) n = parseContentLength(bytes.toString('latin1', LINE.valueStart, LINE.valueEnd));
  return n < 0 || (previous !== -1 && n !== previous) ? -2 : n;
}

const CLOSE = 1;
const KEEP_ALIVE = 2;
const LISTS_FIELDS = 4;

/** The Connection value at LINE: close, keep-alive (counted on HTTP/1.0 only), and whether it names fields. */
function connectionOptions(bytes: Buffer, minor: number): number {
  const { valueStart, valueEnd } = LINE;
  if (nameIs(bytes, valueStart, valueEnd, KEEP_ALIVE_VALUE)) return minor === 0 ? KEEP_ALIVE : 0;
  if (nameIs(bytes, valueStart, valueEnd, CLOSE_VALUE)) return CLOSE;
  const value = bytes.toString('latin1', valueStart, valueEnd);
  let options = listsOtherFields(value) ? LISTS_FIELDS : 0;
  if (hasToken(value, 'close')) options |= CLOSE;
  else if (minor === 0 && hasToken(value, 'keep-alive')) options |= KEEP_ALIVE;
  return options;
}

/** Whether a Connection value names a field besides the keep-alive and close options. */
function listsOtherFields(value: string): boolean {
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase();
    if (t !== '' && t !== 'keep-alive' && t !== 'close') return true;
  }
  return false;
}

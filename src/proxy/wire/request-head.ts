// One request head as a client sent it (RFC 9112): the request line and header lines, read on the head's bytes
// with size and count limits and judged for framing. Strict: whatever could be read two ways (smuggling) is
// refused with the status to answer, never guessed at. The header lines stay where they stand in the head's
// text: a request forwarded with its headers unchanged passes runs of its own lines on (upstream/http1-head.ts), and
// the list of names and values is made only when something asks for it.
import { bytesAre, digitsValue, headerLine, latin1Bytes, nameIs, readHeaderLine } from './header-line.js';
import { knownName } from './header-names.js';
import { hasToken, parseContentLength, TOKEN as TOKEN_RULE } from './http-syntax.js';
import type { Refusal } from './refusal.js';

/** The body is chunked. */
export const CHUNKED_REQUEST = -2;

export interface RequestHeadLimits {
  /** Largest request head (request line, header lines, blank line) in bytes; larger is 431. */
  maxHeaderSize: number;
  /** Most header lines; more is 431. */
  maxHeadersCount: number;
}

export interface ParsedRequest {
  method: string;
  /** The request target: origin-form (absolute-form is turned into it, its authority into the Host), or `*`. */
  target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: number;
  /** Header lines as received: name, value, ... (values without surrounding whitespace). */
  readonly rawHeaders: string[];
  /** Body bytes, or CHUNKED_REQUEST. */
  bodyLength: number;
  /** The Content-Length the client sent (one value, however written), -1 when it sent none. */
  contentLength: number;
  /** The connection may carry another request after this one. */
  keepAlive: boolean;
  /** An HTTP/1.1 Upgrade (Connection: upgrade plus Upgrade): the bytes after the head are the tunnel's. */
  upgrade: boolean;
  /** `Expect: 100-continue`: the client waits for an interim 100 before sending its body. */
  expectContinue: boolean;
}

const SP = 32;
const CR = 13;
const LF = 10;
const SLASH = 47;
/** RFC 9110 token bytes, for the method: the one table, bound in this module (see header-line.ts). */
const TOKEN = TOKEN_RULE;
/** Reused for every header line of every head: parsing a head is synchronous. */
const LINE = headerLine();
// Per header line, four offsets into the head's text: where the line starts, its colon, its value's start and end.
const FIELDS = 4;

const HTTP_SLASH = latin1Bytes('HTTP/');
const KEEP_ALIVE_VALUE = latin1Bytes('keep-alive');
const CLOSE_VALUE = latin1Bytes('close');

/** An absolute-form target: scheme, authority, then the path and query (RFC 9112 §3.2.2). */
const ABSOLUTE_FORM = /^https?:\/\/([^/?#@]*)([/?][^#]*)?$/i;

/** reg-name bytes of a Host (unreserved, sub-delims, `%`): RFC 9110 §7.2 with RFC 3986 §3.2.2. */
const REG_NAME = new Uint8Array(256);
for (const c of "-._~!$&'()*+,;=%") REG_NAME[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) REG_NAME[c] = 1;
for (let c = 65; c <= 90; c++) REG_NAME[c] = 1;
for (let c = 97; c <= 122; c++) REG_NAME[c] = 1;
/** Bytes of an IP literal between the brackets. */
const IP_LITERAL = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF:.') IP_LITERAL[c.charCodeAt(0)] = 1;

/** uri-host (reg-name or IP literal) with an optional port, or empty: the Host rule, on bytes [from, to). */
function isHostValue(bytes: Uint8Array, from: number, to: number): boolean {
  let i = from;
  if (i < to && bytes[i] === 91) {
    i++;
    while (i < to && IP_LITERAL[bytes[i]!] === 1) i++;
    if (i === from + 1 || i === to || bytes[i] !== 93) return false;
    i++;
  } else while (i < to && REG_NAME[bytes[i]!] === 1) i++;
  if (i === to) return true;
  if (bytes[i] !== 58) return false;
  for (i++; i < to; i++) if (bytes[i]! < 48 || bytes[i]! > 57) return false;
  return true;
}

function fail(status: number, reason: string): Refusal {
  return { status, reason };
}

/** A parsed request head: what routing and framing need, and its header lines where they stand in its text. */
export class RequestHead implements ParsedRequest {
  private raw: string[] | undefined = undefined;
  constructor(
    readonly method: string,
    readonly target: string,
    readonly minor: number,
    readonly bodyLength: number,
    readonly contentLength: number,
    readonly keepAlive: boolean,
    readonly upgrade: boolean,
    readonly expectContinue: boolean,
    /** The first Host value, or an absolute-form target's authority (which takes the Host's place). */
    readonly host: string | undefined,
    /** The head as latin1 text, from the request line to the CRLF of its last header line. */
    readonly text: string,
    /** FIELDS offsets per header line (see above). */
    readonly offsets: number[],
    /** Per header line, the known lower-case name it has (header-names.ts), or undefined. */
    readonly names: (string | undefined)[],
    /** An absolute-form target's authority: it replaces the first Host line's value (or is added as Host). */
    readonly authority: string | undefined,
    /** A Connection header names other fields (hop-by-hop for this connection). */
    readonly listsFields: boolean,
  ) {}

  get rawHeaders(): string[] {
    if (this.raw === undefined) {
      const { text, offsets, names, authority } = this;
      const raw: string[] = [];
      let hostSeen = false;
      for (let i = 0, k = 0; i < offsets.length; i += FIELDS, k++) {
        const name = text.slice(offsets[i], offsets[i + 1]);
        if (authority !== undefined && !hostSeen && names[k] === 'host') {
          hostSeen = true;
          raw.push(name, authority);
        } else raw.push(name, text.slice(offsets[i + 2], offsets[i + 3]));
      }
      if (authority !== undefined && !hostSeen) raw.push('Host', authority);
      this.raw = raw;
    }
    return this.raw;
  }
}

/** What the header lines of a request say about its framing, gathered line by line. */
interface Framing {
  contentLength: number;
  transferEncoding: string | undefined;
  connectionClose: boolean;
  connectionUpgrade: boolean;
  /** Upgrade lines seen, and whether the last named one protocol the proxy may tunnel (not h2c, not a list). */
  upgradeLines: number;
  upgradeHeader: boolean;
  expectContinue: boolean;
  host: string | undefined;
  listsFields: boolean;
}

/**
 * Parses one request head: `text` (latin1) from the request line up to but excluding the blank line. Returns
 * the request or why it is refused.
 */
export function parseRequestHead(text: string, limits: RequestHeadLimits): RequestHead | Refusal {
  return parseRequestHeadBytes(Buffer.from(`${text}\r\n\r\n`, 'latin1'), 0, text.length, limits);
}

/**
 * Parses the request head in `bytes` [from, end): up to but excluding the blank line, which follows in `bytes`
 * (CRLF CRLF at `end`). Returns the request or why it is refused.
 */
export function parseRequestHeadBytes(
  bytes: Buffer,
  from: number,
  end: number,
  limits: RequestHeadLimits,
  /** The bytes from `from` as latin1 text, when the caller has made it (to `end` + 2 at least). */
  given?: string,
): RequestHead | Refusal {
  // The request line: method SP target SP HTTP/1.x, then the line's CRLF.
  let i = from;
  while (i < end && TOKEN[bytes[i]!] === 1) i++;
  if (i === from || i === end || bytes[i] !== SP) return fail(400, 'malformed request line');
  const methodEnd = i++;
  const targetStart = i;
  while (i < end && bytes[i]! > SP && bytes[i]! < 127) i++;
  if (i === targetStart) return fail(400, 'malformed request line');
  if (i === end || bytes[i] !== SP) {
    const c = bytes[i];
    return fail(400, c === CR || i === end ? 'malformed request line' : 'invalid request target');
  }
  const targetEnd = i++;
  const lineEnd = i + 8;
  if (lineEnd > end || (lineEnd < end && (bytes[lineEnd] !== CR || bytes[lineEnd + 1] !== LF)))
    return fail(400, 'malformed request line');
  if (!bytesAre(bytes, i, i + 5, HTTP_SLASH)) return fail(400, 'malformed request line');
  const major = bytes[i + 5]!;
  const minorCode = bytes[i + 7]!;
  if (bytes[i + 6] !== 46 || major < 48 || major > 57 || minorCode < 48 || minorCode > 57)
    return fail(400, 'malformed HTTP version');
  if (major !== 49 || minorCode > 49) return fail(505, 'unsupported HTTP version');
  const minor = minorCode - 48;
  const length = end + 2 - from;
  const text =
    given === undefined
      ? bytes.toString('latin1', from, end + 2)
      : given.length === length
        ? given
        : given.slice(0, length);
  const method = text.slice(0, methodEnd - from);
  const target = text.slice(targetStart - from, targetEnd - from);
  return headerLines(
    bytes,
    from,
    lineEnd < end ? lineEnd + 2 : end,
    end,
    limits,
    text,
    method,
    target,
    minor,
  );
}

/** The request-target forms a server must accept (RFC 9112 §3.2): origin-form, `*` for OPTIONS, absolute-form. */
function targetForm(method: string, target: string): { target: string; authority?: string } | Refusal {
  if (target.charCodeAt(0) === SLASH) return { target };
  if (target === '*')
    return method === 'OPTIONS' ? { target } : fail(400, 'asterisk-form is only for OPTIONS');
  if (method === 'CONNECT') return { target };
  const absolute = ABSOLUTE_FORM.exec(target);
  const authority = absolute?.[1];
  if (absolute === null || authority === undefined || authority === '')
    return fail(400, 'invalid request target');
  const bytes = Buffer.from(authority, 'latin1');
  if (!isHostValue(bytes, 0, bytes.length)) return fail(400, 'invalid request target');
  const rest = absolute[2] ?? '/';
  // Absolute-form is routed and forwarded by its authority.
  return { target: rest.charCodeAt(0) === 63 ? `/${rest}` : rest, authority };
}

/** The header lines from `pos` to `end`, judged, and the head they make with the request line's parts. */
function headerLines(
  bytes: Buffer,
  from: number,
  start: number,
  end: number,
  limits: RequestHeadLimits,
  text: string,
  method: string,
  rawTarget: string,
  minor: number,
): RequestHead | Refusal {
  const form = targetForm(method, rawTarget);
  if ('status' in form) return form;
  const offsets: number[] = [];
  const names: (string | undefined)[] = [];
  const f: Framing = {
    contentLength: -1,
    transferEncoding: undefined,
    connectionClose: minor === 0,
    connectionUpgrade: false,
    upgradeLines: 0,
    upgradeHeader: false,
    expectContinue: false,
    host: undefined,
    listsFields: false,
  };
  let hosts = 0;
  let pos = start;
  while (pos < end) {
    if (names.length >= limits.maxHeadersCount) return fail(431, 'too many header lines');
    const malformed = readHeaderLine(bytes, pos, end, LINE);
    if (malformed !== undefined) return fail(400, malformed);
    const name = knownName(bytes, pos, LINE.colon)?.name;
    if (name !== undefined) {
      const refused = judge(bytes, text, from, name, minor, f);
      if (refused !== undefined) return refused;
      if (name === 'host' && ++hosts > 1) return fail(400, 'more than one Host header');
    }
    offsets.push(pos - from, LINE.colon - from, LINE.valueStart - from, LINE.valueEnd - from);
    names.push(name);
    pos = LINE.next;
  }
  if (minor === 1 && hosts === 0) return fail(400, 'missing Host header');
  if (method === 'CONNECT') return fail(405, 'CONNECT is not supported');
  const bodyLength = framedLength(f, minor);
  if (typeof bodyLength !== 'number') return bodyLength;
  const upgrade = f.connectionUpgrade && f.upgradeLines === 1 && f.upgradeHeader && minor === 1;
  return new RequestHead(
    method,
    form.target,
    minor,
    bodyLength,
    f.contentLength,
    !f.connectionClose,
    upgrade,
    f.expectContinue && bodyLength !== 0,
    form.authority ?? f.host,
    text,
    offsets,
    names,
    form.authority,
    f.listsFields,
  );
}

/** The value of the line at LINE as a string: a slice of the head's text (which starts at `from` in the bytes). */
function lineValue(text: string, from: number): string {
  return text.slice(LINE.valueStart - from, LINE.valueEnd - from);
}

/**
 * Judges one line whose name the proxy knows (its value at LINE in `bytes`; the head's `text` starts at `from`
 * in them); returns why the request is refused, if it is. The value is cut from the text (lineValue) only by
 * the branches that read it as a string: most known lines are judged on their bytes alone.
 */
function judge(
  bytes: Buffer,
  text: string,
  from: number,
  name: string,
  minor: number,
  f: Framing,
): Refusal | undefined {
  const { valueStart, valueEnd } = LINE;
  switch (name) {
    case 'host':
      if (!isHostValue(bytes, valueStart, valueEnd)) return fail(400, 'invalid Host header');
      f.host ??= lineValue(text, from);
      return undefined;
    case 'content-length': {
      let n = digitsValue(bytes, valueStart, valueEnd);
      if (n === -2) n = parseContentLength(lineValue(text, from));
      if (n < 0 || (f.contentLength !== -1 && n !== f.contentLength))
        return fail(400, 'invalid content-length');
      f.contentLength = n;
      return undefined;
    }
    case 'transfer-encoding': {
      const value = lineValue(text, from);
      f.transferEncoding = f.transferEncoding === undefined ? value : `${f.transferEncoding}, ${value}`;
      return undefined;
    }
    case 'connection':
      connectionOptions(bytes, text, from, minor, f);
      return undefined;
    case 'upgrade': {
      // Tunnelled only as one protocol on one line: h2c is never reached by an upgrade (RFC 9113 dropped it), and
      // a list or a second line may name it; such a request is served as it is (Upgrade is hop-by-hop: dropped).
      const value = lineValue(text, from).trim().toLowerCase();
      f.upgradeLines++;
      f.upgradeHeader = value !== '' && value !== 'h2c' && !value.includes(',');
      return undefined;
    }
    case 'expect':
      if (lineValue(text, from).toLowerCase() !== '100-continue') return fail(417, 'unsupported expectation');
      f.expectContinue = minor === 1;
      return undefined;
    default:
      return undefined;
  }
}

/**
 * A Connection line's options: close, keep-alive (HTTP/1.0), upgrade, and whether it names other fields. The
 * usual lone `keep-alive` or `close` is read on the bytes; only a list is cut from `text` (see judge).
 */
function connectionOptions(bytes: Buffer, text: string, from: number, minor: number, f: Framing): void {
  const { valueStart, valueEnd } = LINE;
  if (nameIs(bytes, valueStart, valueEnd, KEEP_ALIVE_VALUE)) {
    if (minor === 0) f.connectionClose = false;
    return;
  }
  if (nameIs(bytes, valueStart, valueEnd, CLOSE_VALUE)) {
    f.connectionClose = true;
    return;
  }
  const value = lineValue(text, from);
  if (hasToken(value, 'close')) f.connectionClose = true;
  else if (minor === 0 && hasToken(value, 'keep-alive')) f.connectionClose = false;
  if (hasToken(value, 'upgrade')) f.connectionUpgrade = true;
  f.listsFields = true;
}

/** The body's length from Content-Length and Transfer-Encoding (RFC 9112 §6), or why the framing is refused. */
function framedLength(f: Framing, minor: number): number | Refusal {
  if (f.transferEncoding === undefined) return f.contentLength === -1 ? 0 : f.contentLength;
  // Both framings at once is how requests are smuggled past another hop.
  if (f.contentLength !== -1) return fail(400, 'both content-length and transfer-encoding');
  // HTTP/1.0 has no chunked framing: the framing is faulty (RFC 9112 §6.1).
  if (minor === 0) return fail(400, 'transfer-encoding in HTTP/1.0');
  const codings = f.transferEncoding.split(',');
  // A request body's length must be knowable: the final coding has to be chunked, and only once.
  if (codings[codings.length - 1]!.trim().toLowerCase() !== 'chunked')
    return fail(400, 'transfer-encoding does not end in chunked');
  for (let i = 0; i < codings.length - 1; i++) {
    if (codings[i]!.trim().toLowerCase() === 'chunked') return fail(400, 'chunked applied twice');
  }
  // Other codings are refused (501, RFC 9112 §6.1): the body is re-chunked, so they would reach the upstream unlabelled.
  if (codings.length > 1) return fail(501, 'transfer-coding other than chunked');
  return CHUNKED_REQUEST;
}

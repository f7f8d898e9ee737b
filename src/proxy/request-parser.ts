// Incremental HTTP/1.x request parser for the client side (RFC 9112): request line and header lines with
// size and count limits, content-length and chunked bodies. Strict: whatever could be read two ways
// (smuggling) is refused with the status to answer, never guessed at.
import { bodyPiece } from './body-piece.js';
import { ChunkedDecoder } from './chunked-decoder.js';
import { headerLine, readHeaderLine } from './header-line.js';
import { hasToken, isToken, nameIs, parseContentLength } from './http-syntax.js';
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
  rawHeaders: string[];
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

/** Receives what the parser reads; calls come in order: head, body chunks, end. */
export interface RequestParserSink {
  onRequestHead(request: ParsedRequest): void;
  onRequestBody(chunk: Buffer): void;
  /** The request is complete; `trailers`: the trailer lines (name, value, ...) of a chunked body that had any. */
  onRequestEnd(trailers?: string[]): void;
}

const SP = 32;
const CR = 13;
const LF = 10;
const CRLFCRLF = Buffer.from('\r\n\r\n');

// Parser states.
const HEAD = 0;
const BODY = 1;
const CHUNKED = 2;
/** After an error or an upgrade head: nothing more is parsed. */
const STOPPED = 3;

/** uri-host (reg-name or IP literal) with an optional port (RFC 9110 §7.2), or empty. */
const HOST_VALUE = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;
/** An absolute-form target: scheme, authority, then the path and query (RFC 9112 §3.2.2). */
const ABSOLUTE_FORM = /^https?:\/\/([^/?#@]*)([/?][^#]*)?$/i;

/** Reused for every header line of every head: parsing a head is synchronous. */
const LINE = headerLine();

function fail(status: number, reason: string): Refusal {
  return { status, reason };
}

/**
 * Parses one request head (`text`: latin1, from the request line up to but excluding the blank line).
 * Returns the request or why it is refused.
 */
export function parseRequestHead(text: string, limits: RequestHeadLimits): ParsedRequest | Refusal {
  const firstEnd = text.indexOf('\r\n');
  const lineEnd = firstEnd === -1 ? text.length : firstEnd;
  const sp1 = text.indexOf(' ', 0);
  if (sp1 <= 0 || sp1 > lineEnd || !isToken(text, 0, sp1)) return fail(400, 'malformed request line');
  const sp2 = text.indexOf(' ', sp1 + 1);
  if (sp2 === -1 || sp2 > lineEnd || sp2 === sp1 + 1) return fail(400, 'malformed request line');
  for (let i = sp1 + 1; i < sp2; i++) {
    const c = text.charCodeAt(i);
    if (c <= SP || c >= 127) return fail(400, 'invalid request target');
  }
  // `HTTP/1.1` exactly after the second space.
  if (lineEnd - sp2 !== 9 || !text.startsWith('HTTP/', sp2 + 1)) return fail(400, 'malformed request line');
  const major = text.charCodeAt(sp2 + 6);
  const minorCode = text.charCodeAt(sp2 + 8);
  if (text.charCodeAt(sp2 + 7) !== 46 || major < 48 || major > 57 || minorCode < 48 || minorCode > 57)
    return fail(400, 'malformed HTTP version');
  if (major !== 49 || minorCode > 49) return fail(505, 'unsupported HTTP version');
  const minor = minorCode - 48;
  const method = text.slice(0, sp1);
  let target = text.slice(sp1 + 1, sp2);
  // The forms a server must accept (RFC 9112 §3.2); absolute-form is routed and forwarded by its authority.
  let authority: string | undefined;
  if (target.charCodeAt(0) !== 47) {
    if (target === '*') {
      if (method !== 'OPTIONS') return fail(400, 'asterisk-form is only for OPTIONS');
    } else if (method !== 'CONNECT') {
      const absolute = ABSOLUTE_FORM.exec(target);
      if (absolute === null || !HOST_VALUE.test(absolute[1]!) || absolute[1] === '')
        return fail(400, 'invalid request target');
      authority = absolute[1]!;
      const rest = absolute[2] ?? '/';
      target = rest.charCodeAt(0) === 63 ? `/${rest}` : rest;
    }
  }

  const rawHeaders: string[] = [];
  let contentLength = -1;
  let transferEncoding: string | undefined;
  let connectionClose = minor === 0;
  let connectionUpgrade = false;
  let upgradeHeader = false;
  let expectContinue = false;
  let host = false;
  let count = 0;
  let pos = firstEnd === -1 ? text.length : firstEnd + 2;
  while (pos < text.length) {
    if (++count > limits.maxHeadersCount) return fail(431, 'too many header lines');
    const malformed = readHeaderLine(text, pos, LINE);
    if (malformed !== undefined) return fail(400, malformed);
    const { colon, value } = LINE;
    const nameLength = colon - pos;
    // Only names of these lengths can be special: most lines skip the comparisons.
    if (nameLength === 4 && nameIs(text, pos, colon, 'host')) {
      if (host) return fail(400, 'more than one Host header');
      if (!HOST_VALUE.test(value)) return fail(400, 'invalid Host header');
      host = true;
      // The absolute-form's authority takes the Host's place (RFC 9112 §3.2.2).
      if (authority !== undefined) {
        rawHeaders.push(text.slice(pos, colon), authority);
        pos = LINE.next;
        continue;
      }
    } else if (nameLength === 14 && nameIs(text, pos, colon, 'content-length')) {
      const n = parseContentLength(value);
      if (n < 0 || (contentLength !== -1 && n !== contentLength)) return fail(400, 'invalid content-length');
      contentLength = n;
    } else if (nameLength === 17 && nameIs(text, pos, colon, 'transfer-encoding')) {
      transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
    } else if (nameLength === 10 && nameIs(text, pos, colon, 'connection')) {
      if (value === 'keep-alive' || value === 'Keep-Alive') {
        if (minor === 0) connectionClose = false;
      } else {
        if (hasToken(value, 'close')) connectionClose = true;
        else if (minor === 0 && hasToken(value, 'keep-alive')) connectionClose = false;
        if (hasToken(value, 'upgrade')) connectionUpgrade = true;
      }
    } else if (nameLength === 7 && nameIs(text, pos, colon, 'upgrade')) {
      // HTTP/2 is never reached by an upgrade (RFC 9113 dropped it): such a request is served as it is.
      if (value.trim().toLowerCase() !== 'h2c') upgradeHeader = true;
    } else if (nameLength === 6 && nameIs(text, pos, colon, 'expect')) {
      if (value.toLowerCase() !== '100-continue') return fail(417, 'unsupported expectation');
      expectContinue = minor === 1;
    }
    rawHeaders.push(text.slice(pos, colon), value);
    pos = LINE.next;
  }
  if (minor === 1 && !host) return fail(400, 'missing Host header');
  if (method === 'CONNECT') return fail(405, 'CONNECT is not supported');
  if (authority !== undefined && !host) rawHeaders.push('Host', authority);

  let bodyLength = contentLength === -1 ? 0 : contentLength;
  if (transferEncoding !== undefined) {
    // Both framings at once is how requests are smuggled past another hop.
    if (contentLength !== -1) return fail(400, 'both content-length and transfer-encoding');
    // HTTP/1.0 has no chunked framing: the framing is faulty (RFC 9112 §6.1).
    if (minor === 0) return fail(400, 'transfer-encoding in HTTP/1.0');
    const codings = transferEncoding.split(',');
    // A request body's length must be knowable: the final coding has to be chunked, and only once.
    if (codings[codings.length - 1]!.trim().toLowerCase() !== 'chunked')
      return fail(400, 'transfer-encoding does not end in chunked');
    for (let i = 0; i < codings.length - 1; i++) {
      if (codings[i]!.trim().toLowerCase() === 'chunked') return fail(400, 'chunked applied twice');
    }
    // Other codings are refused (501, RFC 9112 §6.1): the body is re-chunked, so they would reach the upstream unlabelled.
    if (codings.length > 1) return fail(501, 'transfer-coding other than chunked');
    bodyLength = CHUNKED_REQUEST;
  }
  return {
    method,
    target,
    minor,
    rawHeaders,
    bodyLength,
    contentLength,
    keepAlive: !connectionClose,
    upgrade: connectionUpgrade && upgradeHeader && minor === 1,
    expectContinue: expectContinue && bodyLength !== 0,
  };
}

/** One connection's parser: fed the bytes as they come, it reports each request to the sink. */
export class RequestParser {
  /** Why parsing stopped on bad input; undefined while all is well. */
  error: Refusal | undefined = undefined;
  private state = HEAD;
  private partial: Buffer | undefined = undefined;
  private remaining = 0;
  /** Made at the first chunked body: most connections never see one. */
  private chunked: ChunkedDecoder | undefined = undefined;

  constructor(
    private readonly limits: RequestHeadLimits,
    private readonly sink: RequestParserSink,
  ) {}

  /** Between requests (no head or body part read): a pause here is a clean keep-alive boundary. */
  get idle(): boolean {
    return this.state === HEAD && this.partial === undefined;
  }

  /** Bytes of an incomplete head held so far. */
  get headBytes(): number {
    return this.partial?.length ?? 0;
  }

  /**
   * Reads `chunk` from `offset`. Returns where it stopped: the end of the chunk, or just after a complete
   * request or an upgrade head (the caller decides when to go on), or -1 on bad input (see `error`).
   */
  execute(chunk: Buffer, offset: number): number {
    const length = chunk.length;
    while (offset < length) {
      switch (this.state) {
        case HEAD: {
          const next = this.readHead(chunk, offset);
          if (next < 0) return next;
          if (this.state === HEAD || this.state === STOPPED) return next;
          offset = next;
          break;
        }
        case BODY: {
          const piece = bodyPiece(chunk, offset, this.remaining);
          offset += piece.length;
          this.remaining -= piece.length;
          this.sink.onRequestBody(piece);
          if (this.remaining === 0) {
            this.state = HEAD;
            this.sink.onRequestEnd();
            return offset;
          }
          break;
        }
        case CHUNKED: {
          const decoder = this.chunked!;
          const next = decoder.read(chunk, offset);
          if (next < 0) return this.refuse(decoder.error!.status, decoder.error!.reason);
          offset = next;
          if (decoder.dataBytes > 0) this.sink.onRequestBody(chunk.subarray(next - decoder.dataBytes, next));
          else if (decoder.ended) {
            this.state = HEAD;
            this.sink.onRequestEnd(decoder.trailers);
            return next;
          }
          break;
        }
        default:
          return offset;
      }
    }
    return offset;
  }

  /** No more requests are parsed (the connection is being upgraded or closed). */
  stop(): void {
    this.state = STOPPED;
    this.partial = undefined;
  }

  private refuse(status: number, reason: string): number {
    this.error = { status, reason };
    this.state = STOPPED;
    this.partial = undefined;
    return -1;
  }

  /** 414 when the request line alone is over the limit (RFC 9112 §3), else 431. */
  private tooLarge(buffer: Buffer, from: number): number {
    const lineEnd = buffer.indexOf(LF, from);
    if (lineEnd === -1 || lineEnd - from > this.limits.maxHeaderSize)
      return this.refuse(414, 'request line too long');
    return this.refuse(431, 'request head too large');
  }

  private readHead(chunk: Buffer, offset: number): number {
    let buffer = chunk;
    let from = offset;
    const partial = this.partial;
    if (partial !== undefined) {
      buffer = Buffer.concat([partial, chunk.subarray(offset)]);
      from = 0;
    } else {
      // Empty lines before a request line are tolerated (RFC 9112 §2.2).
      while (from + 1 < chunk.length && chunk[from] === CR && chunk[from + 1] === LF) from += 2;
      if (from === chunk.length) return from;
    }
    // The blank line may begin up to 3 bytes before the new data.
    const end = buffer.indexOf(CRLFCRLF, Math.max(from, partial === undefined ? from : partial.length - 3));
    if (end === -1) {
      // A line ended by a bare LF: refused now rather than waiting for a blank line that never comes.
      const scanFrom = partial === undefined ? from : Math.max(from, partial.length - 1);
      for (let lf = buffer.indexOf(LF, scanFrom); lf !== -1; lf = buffer.indexOf(LF, lf + 1)) {
        if (lf === from || buffer[lf - 1] !== CR) return this.refuse(400, 'bare LF in request head');
      }
      if (buffer.length - from > this.limits.maxHeaderSize) return this.tooLarge(buffer, from);
      this.partial = buffer === chunk ? Buffer.from(chunk.subarray(from)) : buffer;
      return chunk.length;
    }
    if (end + 4 - from > this.limits.maxHeaderSize) return this.tooLarge(buffer, from);
    const head = parseRequestHead(buffer.toString('latin1', from, end), this.limits);
    // Where the head ends in `chunk`: partial bytes came before it.
    const next = partial === undefined ? end + 4 : offset + end + 4 - partial.length;
    this.partial = undefined;
    if ('status' in head) return this.refuse(head.status, head.reason);
    if (head.upgrade) this.state = STOPPED;
    else if (head.bodyLength === CHUNKED_REQUEST) {
      this.state = CHUNKED;
      // Trailers are bounded by the head's size limit; past MAX_TRAILERS they are dropped, not refused (trailers.ts).
      this.chunked ??= new ChunkedDecoder({
        maxTrailerBytes: this.limits.maxHeaderSize,
        maxTrailerFields: Number.POSITIVE_INFINITY,
      });
      this.chunked.start();
    } else if (head.bodyLength > 0) {
      this.state = BODY;
      this.remaining = head.bodyLength;
    }
    this.sink.onRequestHead(head);
    if (this.state === HEAD) this.sink.onRequestEnd();
    return next;
  }
}

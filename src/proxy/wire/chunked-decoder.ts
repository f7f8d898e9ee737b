// The chunked transfer coding (RFC 9112 §7.1) read incrementally, one decoder for both directions: request
// bodies from clients and response bodies from upstreams get the same bounds and the same refusals. It copies
// no body bytes: each read() stops after one run of data, which the caller takes as a view of its own buffer.
import { isToken, isValidFieldValue } from './http-syntax.js';
import type { Refusal } from './refusal.js';

export interface ChunkedLimits {
  /** Bytes of trailer lines (with their line ends) in one message; more is refused with 431. */
  maxTrailerBytes: number;
  /** Trailer fields in one message; more is refused with 431. */
  maxTrailerFields: number;
}

const SP = 32;
const HTAB = 9;
const CR = 13;
const LF = 10;
/** Longest chunk-size or trailer line, with its CR. */
const MAX_LINE = 4096;
/** Chunk-extension bytes allowed per message (they are dropped, but reading them costs CPU). */
const MAX_CHUNK_EXTENSIONS = 16 * 1024;

// Where the decoder is in the body.
const SIZE = 0;
const DATA = 1;
const DATA_END = 2;
const TRAILERS = 3;
const DONE = 4;

/**
 * A chunk-size line without its CRLF: hex digits, then optionally BWS and `;extensions` (ignored, but no
 * control bytes: a bare CR there could end the line for another parser). -1 if malformed, including
 * whitespace with no extension after it, which RFC 9112 §7.1.1 does not allow and parsers read differently.
 */
function parseChunkSize(line: string): number {
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

/** One body at a time; start() before each. */
export class ChunkedDecoder {
  /** Why the body was refused (400, or 431 for trailers); undefined while all is well. */
  error: Refusal | undefined = undefined;
  /** Data bytes that end where the last read() stopped (0: it found none). */
  dataBytes = 0;
  /** Trailer lines (name, value, ...) of the body, once it ended; undefined when it had none. */
  trailers: string[] | undefined = undefined;
  private state = DONE;
  /** A chunk-size or trailer line begun in an earlier buffer. */
  private line = '';
  private remaining = 0;
  private extensionBytes = 0;
  private trailerBytes = 0;

  constructor(private readonly limits: ChunkedLimits) {}

  /** A new body begins. */
  start(): void {
    this.state = SIZE;
    this.error = undefined;
    this.dataBytes = 0;
    this.trailers = undefined;
    this.line = '';
    this.extensionBytes = 0;
    this.trailerBytes = 0;
  }

  /** The last chunk and the trailer section have been read. */
  get ended(): boolean {
    return this.state === DONE && this.error === undefined;
  }

  /**
   * Reads `chunk` from `offset` until a run of data (then `dataBytes` > 0), the body's end, or the end of
   * `chunk`. Returns where it stopped, or -1 on malformed input (see `error`).
   */
  read(chunk: Buffer, offset: number): number {
    this.dataBytes = 0;
    const length = chunk.length;
    while (offset < length && this.state !== DONE) {
      if (this.state === DATA) {
        const n = Math.min(this.remaining, length - offset);
        this.remaining -= n;
        if (this.remaining === 0) this.state = DATA_END;
        this.dataBytes = n;
        return offset + n;
      }
      offset = this.readLine(chunk, offset);
      if (offset < 0) return -1;
    }
    return offset;
  }

  /** Records why the body is refused; false, for the callers to return. */
  private refuse(status: number, reason: string): false {
    this.error = { status, reason };
    this.state = DONE;
    this.line = '';
    return false;
  }

  /** Chunk-size lines, the CRLF after chunk data, and trailer lines. */
  private readLine(chunk: Buffer, offset: number): number {
    const nl = chunk.indexOf(LF, offset);
    if (nl === -1) {
      this.line += chunk.toString('latin1', offset);
      if (this.line.length <= MAX_LINE) return chunk.length;
      this.refuse(400, 'chunk line too long');
      return -1;
    }
    const line = this.line + chunk.toString('latin1', offset, nl);
    this.line = '';
    return this.takeLine(line) ? nl + 1 : -1;
  }

  /** One whole line, with its CR. */
  private takeLine(line: string): boolean {
    if (line.length > MAX_LINE) return this.refuse(400, 'chunk line too long');
    if (line.charCodeAt(line.length - 1) !== CR) return this.refuse(400, 'bare LF in chunked body');
    const text = line.slice(0, -1);
    if (this.state === SIZE) return this.takeSize(text);
    if (this.state === DATA_END) {
      if (text !== '') return this.refuse(400, 'malformed chunk end');
      this.state = SIZE;
      return true;
    }
    if (text !== '') return this.takeTrailer(text);
    this.state = DONE;
    return true;
  }

  private takeSize(text: string): boolean {
    const size = parseChunkSize(text);
    if (size < 0) return this.refuse(400, 'malformed chunk size');
    const semicolon = text.indexOf(';');
    if (semicolon !== -1) {
      this.extensionBytes += text.length - semicolon;
      if (this.extensionBytes > MAX_CHUNK_EXTENSIONS) return this.refuse(400, 'too many chunk extensions');
    }
    if (size === 0) this.state = TRAILERS;
    else {
      this.state = DATA;
      this.remaining = size;
    }
    return true;
  }

  /** One trailer line (without its CRLF), checked and kept; the caller decides which ones go on (trailers.ts). */
  private takeTrailer(text: string): boolean {
    this.trailerBytes += text.length + 2;
    if (this.trailerBytes > this.limits.maxTrailerBytes) return this.refuse(431, 'trailers too large');
    const colon = text.indexOf(':');
    if (colon <= 0 || !isToken(text, 0, colon)) return this.refuse(400, 'malformed trailer line');
    const value = text.slice(colon + 1).trim();
    if (!isValidFieldValue(value)) return this.refuse(400, 'invalid trailer value');
    this.trailers ??= [];
    if (this.trailers.length >= 2 * this.limits.maxTrailerFields)
      return this.refuse(431, 'too many trailers');
    this.trailers.push(text.slice(0, colon), value);
    return true;
  }
}

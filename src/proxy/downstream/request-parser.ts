// Incremental HTTP/1.x request parser for the client side (RFC 9112): request line and header lines with
// size and count limits, content-length and chunked bodies. Strict: whatever could be read two ways
// (smuggling) is refused with the status to answer, never guessed at.
import { bodyPiece } from '../wire/body-piece.js';
import { ChunkedDecoder } from '../wire/chunked-decoder.js';
import { type HeadSearch, headEnd } from '../wire/header-line.js';
import type { Refusal } from '../wire/refusal.js';
import {
  CHUNKED_REQUEST,
  parseRequestHeadBytes,
  type RequestHead,
  type RequestHeadLimits,
} from '../wire/request-head.js';

/** Receives what the parser reads; calls come in order: head, body chunks, end. */
export interface RequestParserSink {
  onRequestHead(request: RequestHead): void;
  onRequestBody(chunk: Buffer): void;
  /** The request is complete; `trailers`: the trailer lines (name, value, ...) of a chunked body that had any. */
  onRequestEnd(trailers?: string[]): void;
}

const CR = 13;
const LF = 10;
/** Reused for every head's search. */
const SEARCH: HeadSearch = { end: -1, text: undefined };

// Parser states.
const HEAD = 0;
const BODY = 1;
const CHUNKED = 2;
/** After an error or an upgrade head: nothing more is parsed. */
const STOPPED = 3;

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
    const search = headEnd(
      buffer,
      from,
      Math.max(from, partial === undefined ? from : partial.length - 3),
      SEARCH,
    );
    const end = search.end;
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
    const head = parseRequestHeadBytes(buffer, from, end, this.limits, search.text);
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

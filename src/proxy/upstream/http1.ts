// The proxy's HTTP/1.1 client toward upstream endpoints: keep-alive net.Sockets pooled per endpoint (capped),
// one request at a time per connection, the request head written as one string and the response framed by
// a small incremental parser whose body bytes go straight to the sink. Cheaper per request than a general
// client (undici, node:http Agent) because it does only what a proxy needs. Classes here (no hierarchy):
// one object per connection and per exchange, their methods shared, so a request allocates little.
import { connect, type Socket } from 'node:net';
import type { RequestBody } from '../exchange.js';
import { bodyPiece } from '../wire/body-piece.js';
import { ChunkedDecoder, type ChunkedLimits } from '../wire/chunked-decoder.js';
import { type HeadSearch, headEnd } from '../wire/header-line.js';
import { CHUNKED, parseResponseHeadBytes, UNTIL_CLOSE } from '../wire/response-head.js';
import { lastChunk, MAX_TRAILERS } from '../wire/trailers.js';
import { requestIdOf } from './http1-head.js';
import { awaitUpstreamDrain, sendStallMessage } from './send-stall.js';
import { type UpstreamCall, UpstreamError, type UpstreamErrorKind, type UpstreamSink } from './upstream.js';

export interface UpstreamPoolOptions {
  maxConnections: number;
  idleTimeoutMs: number;
  connectTimeoutMs: number;
  /** A request body the upstream takes nothing of for this long fails its exchange. */
  sendTimeoutMs: number;
}

/** One request toward one endpoint. */
export class UpstreamExchange implements UpstreamCall {
  connection: UpstreamConnection | undefined = undefined;
  done = false;
  constructor(
    /** Request line, header lines and the blank line, latin1. */
    readonly head: string,
    /** The request body, or null; `chunked`: encode it (the head says `transfer-encoding: chunked`). */
    readonly body: RequestBody | null,
    readonly chunked: boolean,
    /** A HEAD request: the response has no body whatever its headers say. */
    readonly noResponseBody: boolean,
    readonly sink: UpstreamSink,
  ) {}

  /** Abandons the exchange: the connection is closed (its state is unknown), nothing more is reported. */
  cancel(): void {
    if (this.done) return;
    this.done = true;
    const connection = this.connection;
    if (connection !== undefined) {
      connection.exchange = undefined;
      this.connection = undefined;
      connection.socket.destroy();
    }
  }

  /** Reading resumes after the sink returned false from onUpstreamData. */
  resume(): void {
    this.connection?.socket.resume();
  }

  get requestId(): string | undefined {
    return requestIdOf(this.head);
  }
}

const MAX_HEAD_BYTES = 64 * 1024;
/**
 * Interim (1xx) responses allowed before the final one: 100 Continue, a few 103 Early Hints, a 102 Processing
 * now and then. More is a backend flooding the proxy with heads to parse, for as long as the route has no
 * timeout: the exchange fails (502) and the connection is closed.
 */
export const MAX_INTERIM_RESPONSES = 64;
/** Every upstream socket reads into this; the sink gets views of it, valid only during its call. */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);
/** An upstream's trailers get the bounds a client's get, with its head's size limit. */
const CHUNKED_LIMITS: ChunkedLimits = { maxTrailerBytes: MAX_HEAD_BYTES, maxTrailerFields: MAX_TRAILERS };
/** Reused for every head's search. */
const SEARCH: HeadSearch = { end: -1, text: undefined };

// Parser states.
const HEAD = 0;
const BODY = 1;
const BODY_UNTIL_CLOSE = 2;
const CHUNKED_BODY = 3;

function errorKind(code: string | undefined): UpstreamErrorKind {
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ETIMEDOUT') return 'connect_timeout';
  return code === undefined || code === 'ECONNRESET' || code === 'EPIPE' ? 'reset' : 'error';
}

class UpstreamConnection {
  readonly socket: Socket;
  exchange: UpstreamExchange | undefined = undefined;
  /** Pool sweep tick at which the connection became idle. */
  idleTick = 0;
  private state = HEAD;
  private partial: Buffer | undefined = undefined;
  /** Made at the first chunked response. */
  private chunked: ChunkedDecoder | undefined = undefined;
  private remaining = 0;
  private keepAlive = true;
  private requestSent = false;
  /** Interim responses read for the current exchange. */
  private interim = 0;
  private failure: Error | undefined = undefined;

  constructor(private readonly pool: EndpointPool) {
    const socket = connect({
      host: pool.host,
      port: pool.port,
      noDelay: true,
      // Reads land in one shared buffer, parsed at once: no buffer per read, no stream machinery.
      onread: { buffer: READ_BUFFER, callback: (n: number) => this.onRead(n) },
    });
    this.socket = socket;
    socket.setTimeout(pool.options.connectTimeoutMs);
    socket.once('connect', () => socket.setTimeout(0));
    socket.on('timeout', () => {
      const error = new Error('connect timeout') as NodeJS.ErrnoException;
      error.code = 'ETIMEDOUT';
      socket.destroy(error);
    });
    socket.on('end', () => this.onEnd());
    socket.on('error', (error) => {
      this.failure = error;
    });
    socket.on('close', () => this.onClose());
  }

  assign(exchange: UpstreamExchange): void {
    this.exchange = exchange;
    exchange.connection = this;
    this.state = HEAD;
    this.partial = undefined;
    this.interim = 0;
    // After a CONNECT a server may make the connection a tunnel, whatever its answer says about a body: the
    // connection carries nothing more (the proxy refuses CONNECT from clients; this holds for any caller).
    this.keepAlive = !exchange.head.startsWith('CONNECT ');
    const socket = this.socket;
    socket.write(exchange.head, 'latin1');
    if (exchange.body === null) this.requestSent = true;
    else {
      this.requestSent = false;
      this.sendBody(exchange, exchange.body);
    }
  }

  private sendBody(exchange: UpstreamExchange, body: RequestBody): void {
    const socket = this.socket;
    const chunked = exchange.chunked;
    const sendTimeoutMs = this.pool.options.sendTimeoutMs;
    const onDrain = (): void => {
      if (exchange.connection === this) body.resume();
    };
    const onStall = (): void => {
      if (exchange.connection === this && !this.requestSent)
        this.fail(sendStallMessage(sendTimeoutMs), 'send_timeout');
    };
    body.on('data', (chunk: Buffer) => {
      if (exchange.connection !== this) return;
      let flushed: boolean;
      if (chunked) {
        if (chunk.length === 0) return;
        socket.cork();
        socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
        socket.write(chunk);
        flushed = socket.write('\r\n', 'latin1');
        socket.uncork();
      } else flushed = socket.write(chunk);
      // Backpressure: stop reading from the client while the upstream is slower, within the send deadline.
      if (!flushed) awaitUpstreamDrain(body, socket, sendTimeoutMs, onDrain, onStall);
    });
    body.on('end', () => {
      if (exchange.connection !== this) return;
      // Trailers only fit the chunked coding; a body of known length ends without them.
      if (chunked) socket.write(lastChunk(body.trailers), 'latin1');
      this.requestSent = true;
    });
  }

  private fail(message: string, kind: UpstreamErrorKind): void {
    const exchange = this.exchange;
    this.keepAlive = false;
    this.socket.destroy();
    if (exchange === undefined) return;
    this.exchange = undefined;
    exchange.connection = undefined;
    exchange.done = true;
    this.discardUnsentBody(exchange);
    exchange.sink.onUpstreamError(new UpstreamError(message, kind));
  }

  /**
   * The exchange ended before its request body was all sent (an early answer, a failure): let the rest of
   * the body flow to nowhere, or a body paused for backpressure would hold the client connection forever.
   */
  private discardUnsentBody(exchange: UpstreamExchange): void {
    if (exchange.body !== null && !this.requestSent) exchange.body.resume();
  }

  private complete(last: Buffer | undefined, trailers?: string[]): void {
    const exchange = this.exchange!;
    this.exchange = undefined;
    exchange.connection = undefined;
    exchange.done = true;
    this.state = HEAD;
    if (this.keepAlive && this.requestSent) {
      // The exchange may have paused reading (backpressure) and ended before resuming: an idle connection
      // must read, to notice the upstream closing it and to serve the next exchange.
      if (this.socket.isPaused()) this.socket.resume();
      this.pool.release(this);
    } else {
      this.socket.destroy();
      this.discardUnsentBody(exchange);
    }
    exchange.sink.onUpstreamEnd(last, trailers);
  }

  private onRead(n: number): boolean {
    this.onData(READ_BUFFER.subarray(0, n));
    return true;
  }

  private onData(chunk: Buffer): void {
    const exchange = this.exchange;
    if (exchange === undefined) {
      // Bytes nobody asked for (or for a cancelled exchange): the connection cannot be trusted.
      this.socket.destroy();
      return;
    }
    const sink = exchange.sink;
    let offset = 0;
    const length = chunk.length;
    while (offset < length && this.exchange === exchange) {
      switch (this.state) {
        case HEAD: {
          offset = this.readHead(exchange, chunk, offset);
          if (offset < 0) return;
          break;
        }
        case BODY: {
          const piece = bodyPiece(chunk, offset, this.remaining);
          offset += piece.length;
          this.remaining -= piece.length;
          if (this.remaining === 0) {
            if (offset < length) this.keepAlive = false;
            this.complete(piece);
            return;
          }
          if (!sink.onUpstreamData(piece)) this.socket.pause();
          break;
        }
        case BODY_UNTIL_CLOSE: {
          const piece = offset === 0 ? chunk : chunk.subarray(offset);
          offset = length;
          if (!sink.onUpstreamData(piece)) this.socket.pause();
          break;
        }
        case CHUNKED_BODY: {
          const decoder = this.chunked!;
          const next = decoder.read(chunk, offset);
          if (next < 0) {
            this.fail(`invalid upstream chunked body: ${decoder.error!.reason}`, 'invalid_response');
            return;
          }
          offset = next;
          if (decoder.dataBytes > 0) {
            if (!sink.onUpstreamData(chunk.subarray(next - decoder.dataBytes, next))) this.socket.pause();
          } else if (decoder.ended) {
            if (offset < length) this.keepAlive = false;
            this.complete(undefined, decoder.trailers);
            return;
          }
          break;
        }
      }
    }
  }

  /**
   * Reads a response head from `chunk` at `offset` (after bytes kept from earlier reads), reports it and sets
   * the body's state. Returns where the body starts in `chunk`, or -1 when this read is done with: the head is
   * incomplete (kept for the next read), invalid (failed), or ended the exchange.
   */
  private readHead(exchange: UpstreamExchange, chunk: Buffer, offset: number): number {
    let buffer = chunk;
    let from = offset;
    if (this.partial !== undefined) {
      buffer = Buffer.concat([this.partial, chunk.subarray(offset)]);
      from = 0;
    }
    const search = headEnd(buffer, from, from, SEARCH);
    const end = search.end;
    if (end === -1) {
      if (buffer.length - from > MAX_HEAD_BYTES) {
        this.fail('response head too large', 'invalid_response');
        return -1;
      }
      // A copy: `chunk` is the shared read buffer, overwritten by the next read.
      this.partial = buffer === chunk ? Buffer.from(chunk.subarray(offset)) : buffer;
      return -1;
    }
    // Continue after the head, in whichever buffer holds it.
    const consumed = end + 4 - from;
    const head = parseResponseHeadBytes(buffer, from, end, exchange.noResponseBody, search.text);
    if (this.partial !== undefined) {
      // `consumed` counts partial bytes too; map back onto `chunk`.
      offset = offset + consumed - this.partial.length;
      this.partial = undefined;
    } else offset += consumed;
    if (typeof head === 'string') {
      this.fail(`invalid upstream response: ${head}`, 'invalid_response');
      return -1;
    }
    if (head.status < 200) {
      // 101 was never asked for (upgrades take another path); other 1xx are interim.
      if (head.status === 101) {
        this.fail('unexpected 101 response', 'invalid_response');
        return -1;
      }
      if (++this.interim > MAX_INTERIM_RESPONSES) {
        this.fail(`more than ${MAX_INTERIM_RESPONSES} interim responses`, 'invalid_response');
        return -1;
      }
      return offset;
    }
    if (!head.keepAlive) this.keepAlive = false;
    exchange.sink.onUpstreamHead(head.status, head, head.bodyLength !== 0 && offset === chunk.length);
    if (this.exchange !== exchange) return -1;
    if (head.bodyLength === 0) {
      if (offset < chunk.length) this.keepAlive = false;
      this.complete(undefined);
      return -1;
    }
    if (head.bodyLength === CHUNKED) {
      this.state = CHUNKED_BODY;
      this.chunked ??= new ChunkedDecoder(CHUNKED_LIMITS);
      this.chunked.start();
    } else if (head.bodyLength === UNTIL_CLOSE) this.state = BODY_UNTIL_CLOSE;
    else {
      this.state = BODY;
      this.remaining = head.bodyLength;
    }
    return offset;
  }

  private onEnd(): void {
    if (this.exchange !== undefined && this.state === BODY_UNTIL_CLOSE) {
      this.keepAlive = false;
      this.complete(undefined);
    }
  }

  private onClose(): void {
    this.pool.forget(this);
    const exchange = this.exchange;
    if (exchange !== undefined) {
      const code = (this.failure as NodeJS.ErrnoException | undefined)?.code;
      this.fail(this.failure?.message ?? 'upstream closed the connection', errorKind(code));
    }
  }
}

/**
 * Connections to one endpoint: idle ones reused oldest first, at most `maxConnections`, then a queue.
 * Oldest first keeps every connection a burst opened in use while traffic flows, so the next burst finds
 * them warm (newest first let the idle timeout close them between bursts, to be reopened in the next).
 * The cost: the pool shrinks only once a connection waits out the idle timeout, i.e. when traffic falls
 * below one request per connection per timeout; `maxConnections` bounds it.
 */
export class EndpointPool {
  private readonly idle: UpstreamConnection[] = [];
  private readonly all = new Set<UpstreamConnection>();
  private readonly queue: UpstreamExchange[] = [];
  private closed = false;
  private tick = 0;
  private sweeper: NodeJS.Timeout | undefined = undefined;

  constructor(
    readonly host: string,
    readonly port: number,
    /** `host:port` (IPv6 in brackets), the Host header when a request has none. */
    readonly authority: string,
    readonly options: UpstreamPoolOptions,
  ) {}

  send(exchange: UpstreamExchange): void {
    let connection = this.idle.shift();
    while (connection?.socket.destroyed) connection = this.idle.shift();
    if (connection !== undefined) connection.assign(exchange);
    else if (this.all.size < this.options.maxConnections) {
      connection = new UpstreamConnection(this);
      this.all.add(connection);
      connection.assign(exchange);
      this.startSweeper();
    } else this.queue.push(exchange);
  }

  /** A connection finished its exchange and can serve another. */
  release(connection: UpstreamConnection): void {
    const next = this.nextQueued();
    if (next !== undefined) {
      connection.assign(next);
      return;
    }
    if (this.closed) {
      connection.socket.destroy();
      return;
    }
    connection.idleTick = this.tick;
    this.idle.push(connection);
  }

  /** A connection closed. */
  forget(connection: UpstreamConnection): void {
    this.all.delete(connection);
    const i = this.idle.indexOf(connection);
    if (i !== -1) this.idle.splice(i, 1);
    // Its slot is free: start a queued exchange on a new connection.
    const next = this.nextQueued();
    if (next !== undefined) this.send(next);
    if (this.all.size === 0) this.stopSweeper();
  }

  /** Graceful: idle connections close now, busy ones once their exchange ends. */
  close(): void {
    this.closed = true;
    for (const c of this.idle.splice(0)) c.socket.destroy();
  }

  destroy(): void {
    this.closed = true;
    for (const c of this.all) c.socket.destroy();
  }

  private nextQueued(): UpstreamExchange | undefined {
    let next = this.queue.shift();
    while (next?.done) next = this.queue.shift();
    return next;
  }

  // One coarse timer per pool instead of one per idle socket: a connection idle for 8 ticks (at most the
  // idle timeout, at least 7/8 of it) is closed.
  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    const interval = Math.max(10, this.options.idleTimeoutMs / 8);
    this.sweeper = setInterval(() => {
      this.tick++;
      const idle = this.idle;
      while (idle.length > 0 && this.tick - idle[0]!.idleTick >= 8) idle.shift()!.socket.destroy();
    }, interval);
    this.sweeper.unref();
  }

  private stopSweeper(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

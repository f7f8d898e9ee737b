// One client connection of the proxy's own HTTP/1.1 server: feeds the socket's bytes to the request parser,
// hands each request to the handler with its response, one at a time (pipelined requests wait, in order),
// streams request bodies with backpressure, and answers bad input with 400/431/505 and a close.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { type BodyLimit, ClientRequest, clientFacts, type RequestBody, withinLimit } from '../exchange.js';
import { CHUNKED_REQUEST, type RequestHead } from '../wire/request-head.js';
import { forwardableTrailers } from '../wire/trailers.js';
import { ClientResponse, type ResponseConnection } from './client-response.js';
import { matchPreface, PREFACE_MORE, PREFACE_NO } from './h2/preface.js';
import { RequestParser, type RequestParserSink } from './request-parser.js';
import { kept, readShared, type SharedReads } from './shared-reads.js';

/** What a connection needs from its server. */
export interface ConnectionHost {
  readonly limits: { maxHeaderSize: number; maxHeadersCount: number };
  /** The coarse clock (ms) the timeout sweep keeps. */
  readonly clock: number;
  /** The server is closing: no further request on any connection. */
  readonly closing: boolean;
  onRequest(request: ClientRequest, response: ClientResponse): void;
  onUpgrade(request: ClientRequest, socket: Socket, head: Buffer): void;
  /** Cleartext listeners that take h2c: a connection opening with the HTTP/2 preface goes here. */
  readonly onPreface?: ((socket: Socket) => void) | undefined;
  forget(connection: ClientConnection): void;
}

/** Bytes read ahead of a pipelined request still being answered, before reading pauses. */
const MAX_READ_AHEAD = 64 * 1024;
/** How long a socket the proxy ended is kept for the client to read the last answer and close its side. */
const LINGER_MS = 1000;
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

function ignore(): void {}

/** The whole answer to a request refused before the handler saw it: status, no body, close. */
function refusal(status: number): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nserver: portico\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`;
}

/** The request body stream: reading more resumes the socket. */
class ConnectionBody extends Readable implements RequestBody {
  trailers: string[] | undefined = undefined;
  received = 0;
  limit: BodyLimit | undefined = undefined;
  constructor(private readonly connection: ClientConnection) {
    super();
    // A client that resets mid-upload makes the body error; whoever reads it learns so from 'close'.
    this.on('error', ignore);
  }
  override _read(): void {
    this.connection.resumeBody();
  }
}

export class ClientConnection implements RequestParserSink, ResponseConnection {
  private readonly parser: RequestParser;
  private request: ClientRequest | undefined = undefined;
  private response: ClientResponse | undefined = undefined;
  private body: ConnectionBody | undefined = undefined;
  /** The current request's body is still arriving. */
  private bodyOpen = false;
  /** The response ended before the body did: the rest of the body is read and dropped. */
  private discardBody = false;
  /** Bytes after a complete request, kept until its response ends. */
  private readAhead: Buffer | undefined = undefined;
  /** Responses wait in the socket's buffer (over its high-water mark): no next request until 'drain'. */
  private awaitingOutput = false;
  /** The client half-closed: no more requests, close once the current one is answered. */
  private clientEnded = false;
  private upgraded = false;
  /** The first bytes are still to be told apart from the HTTP/2 preface. */
  private sniffing: boolean;
  /** First bytes that agree with the preface so far, kept until there are enough to tell. */
  private prefaceBytes: Buffer | undefined = undefined;
  private done = false;
  /** When the proxy ended its side (the host's clock); the socket is destroyed after a grace. */
  private endedAt: number | undefined = undefined;
  /** When the current phase (waiting for a head, reading a request) began, on the host's clock. */
  since: number;
  /** Any byte of the current phase arrived (distinguishes a slow head from an idle keep-alive). */
  private started = false;
  /** The connection served a request already (idle now means keep-alive idle). */
  private served = false;
  /** When the current request body last delivered bytes (or reading it resumed), on the host's clock. */
  private bodyAt = 0;
  /** Reads come as views of a buffer shared by all connections (see shared-reads.ts): what is kept is copied. */
  private shared: SharedReads | undefined = undefined;

  constructor(
    readonly socket: Socket,
    private readonly host: ConnectionHost,
  ) {
    this.parser = new RequestParser(host.limits, this);
    this.since = host.clock;
    this.sniffing = host.onPreface !== undefined;
    (socket as OwnedSocket)[CONNECTION] = this;
    socket.on('data', onSocketData);
    socket.on('drain', onSocketDrain);
    socket.on('error', ignore);
    socket.on('end', onSocketEnd);
    socket.on('close', onSocketClose);
    if (!this.sniffing) this.readShared();
  }

  /** Plain TCP connections read into the shared buffer once they are known to speak HTTP/1.1. */
  private readShared(): void {
    const socket = this.socket;
    if ((socket as { encrypted?: boolean }).encrypted === true) return;
    this.shared = readShared(socket, (bytes) => this.onData(bytes));
    if (this.shared !== undefined) socket.off('data', onSocketData);
  }

  get lastResponse(): boolean {
    return this.host.closing || (this.clientEnded && this.readAhead === undefined);
  }

  /** No request in progress: safe to close without cutting anyone off. */
  get idle(): boolean {
    return this.response === undefined && this.parser.idle && this.readAhead === undefined;
  }

  /** The connection checks its timeouts (called by the host's sweep). */
  sweep(timeouts: {
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    requestBodyIdleTimeoutMs: number;
  }): void {
    const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = timeouts;
    if (this.upgraded) return;
    if (this.done) {
      // The client did not close after the last answer: a grace to read it once flushed, else the idle timeout.
      const ended = this.endedAt;
      const grace = this.socket.writableFinished ? LINGER_MS : keepAliveTimeoutMs;
      if (ended !== undefined && this.host.clock - ended >= grace) this.socket.destroy();
      return;
    }
    const elapsed = this.host.clock - this.since;
    if (this.awaitingOutput) {
      // A client that stopped reading its answers.
      if (elapsed >= requestTimeoutMs) this.socket.destroy();
      return;
    }
    if (this.request === undefined) {
      if (this.started || !this.served) {
        // Half a head (slowloris), or a new connection that sends nothing.
        if (elapsed >= headersTimeoutMs) this.refuse(408, this.started);
      } else if (elapsed >= keepAliveTimeoutMs) this.close();
    } else if (this.bodyOpen) {
      // A stall counts only while the proxy reads: a socket paused for backpressure waits on the upstream, not on
      // the client.
      const stalled =
        !this.socket.isPaused() && this.host.clock - this.bodyAt >= timeouts.requestBodyIdleTimeoutMs;
      if (elapsed >= requestTimeoutMs || stalled) this.abortRequest(408);
    }
  }

  /**
   * Ends the request in progress now: `status` when no response is under way (else the connection is cut), the
   * connection closes without waiting for the rest of the body, and the handler learns at once (so an upstream
   * exchange the request holds is cancelled, not kept until the socket goes).
   */
  abortRequest(status: number): void {
    if (this.done) return;
    const response = this.response;
    if (response !== undefined && !response.headersSent) response.statusCode = status;
    this.refuse(status, true);
    response?.close();
  }

  /** Closes now (between requests), or after the response in progress. */
  close(): void {
    if (this.idle || (this.endedAt !== undefined && this.socket.writableFinished)) {
      this.done = true;
      this.socket.destroy();
    }
  }

  resumeBody(): void {
    if (this.readAhead === undefined && !this.awaitingOutput && this.socket.isPaused()) {
      // The wait was ours (backpressure), not the client's: the stall clock starts again.
      this.bodyAt = this.host.clock;
      this.socket.resume();
    }
  }

  onData(received: Buffer): void {
    if (this.done) return;
    let chunk = received;
    if (
      this.readAhead !== undefined ||
      this.awaitingOutput ||
      (this.request !== undefined && !this.bodyOpen)
    ) {
      // A pipelined request: it waits until the one before is answered (and its answer is flushed).
      this.readAhead = this.readAhead === undefined ? kept(chunk) : Buffer.concat([this.readAhead, chunk]);
      if (this.awaitingOutput || this.readAhead.length > MAX_READ_AHEAD) this.socket.pause();
      return;
    }
    if (this.sniffing) {
      const first = this.sniff(chunk);
      if (first === undefined) return;
      chunk = first;
      this.readShared();
    }
    if (!this.started && this.request === undefined) {
      this.started = true;
      // A new connection's head is timed from the accept (a client cannot reset it by trickling a byte late);
      // on a keep-alive connection the idle phase ends here (bounded by the keep-alive timeout already).
      if (this.served) this.since = this.host.clock;
    }
    this.parse(chunk, 0);
  }

  /** The bytes to parse as HTTP/1.1, or undefined when they went to HTTP/2 or more are needed to tell. */
  private sniff(chunk: Buffer): Buffer | undefined {
    const bytes = this.prefaceBytes === undefined ? chunk : Buffer.concat([this.prefaceBytes, chunk]);
    const match = matchPreface(bytes);
    if (match === PREFACE_MORE) {
      // A copy: the socket may reuse its buffer.
      this.prefaceBytes = Buffer.from(bytes);
      return undefined;
    }
    this.sniffing = false;
    this.prefaceBytes = undefined;
    if (match === PREFACE_NO) return bytes;
    this.handOff(bytes);
    return undefined;
  }

  /** The connection speaks HTTP/2: its socket (with the bytes read so far put back) goes to the HTTP/2 server. */
  private handOff(bytes: Buffer): void {
    this.done = true;
    const socket = this.socket;
    this.detach();
    socket.pause();
    socket.unshift(bytes);
    this.host.onPreface!(socket);
  }

  /** Only this connection's listeners go: others (connection metrics) stay with the socket. */
  private detach(): void {
    const socket = this.socket;
    // Whoever takes the socket over reads it as a stream again.
    this.shared?.release();
    socket.off('data', onSocketData);
    socket.off('drain', onSocketDrain);
    socket.off('end', onSocketEnd);
    socket.off('close', onSocketClose);
    socket.off('error', ignore);
    (socket as OwnedSocket)[CONNECTION] = undefined;
    this.host.forget(this);
  }

  private parse(chunk: Buffer, from: number): void {
    let offset = from;
    while (offset < chunk.length && !this.done) {
      const next = this.parser.execute(chunk, offset);
      if (next < 0) {
        this.onParseError();
        return;
      }
      offset = next;
      if (this.upgraded) {
        this.startUpgrade(kept(chunk.subarray(offset)));
        return;
      }
      if (this.request !== undefined && !this.bodyOpen && offset < chunk.length) {
        // A complete request still being answered: what follows waits.
        this.readAhead = kept(chunk.subarray(offset));
        if (this.readAhead.length > MAX_READ_AHEAD) this.socket.pause();
        return;
      }
      if (this.request === undefined && offset < chunk.length && this.outputBacklogged()) {
        // Answered at once, but the client is not reading its answers: the next request waits for 'drain'.
        this.readAhead = kept(chunk.subarray(offset));
        return;
      }
    }
  }

  onRequestHead(head: RequestHead): void {
    const hasBody = head.bodyLength !== 0;
    const body = hasBody && !head.upgrade ? new ConnectionBody(this) : null;
    const request = new ClientRequest(
      head.method,
      head.target,
      head,
      clientFacts(this.socket),
      body,
      head.bodyLength === CHUNKED_REQUEST,
      head.contentLength,
    );
    this.request = request;
    this.since = this.host.clock;
    this.bodyAt = this.host.clock;
    this.served = true;
    if (head.upgrade) {
      this.upgraded = true;
      return;
    }
    this.body = body ?? undefined;
    this.bodyOpen = body !== null;
    this.discardBody = false;
    const response = new ClientResponse(
      this,
      head.method === 'HEAD',
      head.minor === 0,
      head.keepAlive && !this.host.closing,
    );
    this.response = response;
    if (head.expectContinue) this.socket.write(CONTINUE, 'latin1');
    this.host.onRequest(request, response);
  }

  onRequestBody(chunk: Buffer): void {
    this.bodyAt = this.host.clock;
    const body = this.body;
    if (body === undefined || this.discardBody) return;
    if (!withinLimit(body, chunk)) {
      // Over the limit: the handler answers 413 and closes; the rest is not read into memory.
      this.discardBody = true;
      return;
    }
    if (!body.push(kept(chunk))) this.socket.pause();
  }

  onRequestEnd(trailers?: string[]): void {
    if (this.body !== undefined) {
      if (trailers !== undefined) this.body.trailers = forwardableTrailers(trailers);
      if (!this.discardBody) this.body.push(null);
      this.body = undefined;
    }
    if (!this.bodyOpen) return;
    this.bodyOpen = false;
    if (this.response?.writableFinished === true) this.exchangeDone();
  }

  responseFinished(response: ClientResponse): void {
    if (response !== this.response) return;
    if (this.bodyOpen) {
      // Answered before the upload ended: read the rest and drop it, so the connection can go on.
      this.discardBody = true;
      if (this.socket.isPaused() && this.readAhead === undefined) this.socket.resume();
      return;
    }
    this.exchangeDone();
  }

  /** The request was read and answered: close, or go on with the next one. */
  private exchangeDone(): void {
    const response = this.response!;
    this.request = undefined;
    this.response = undefined;
    this.started = false;
    this.since = this.host.clock;
    if (response.closeAfter || this.host.closing) {
      this.endConnection(undefined);
      return;
    }
    if (this.readAhead === undefined) {
      if (this.clientEnded) this.endOfInput();
      else this.outputBacklogged();
      return;
    }
    if (this.outputBacklogged()) return;
    if (this.socket.isPaused()) this.socket.resume();
    // Not from inside the answer's call stack (the handler or the upstream client may still be unwinding).
    process.nextTick(parseLater, this);
  }

  /** Continues with the read-ahead bytes, unless another request is being answered again. */
  parseAhead(): void {
    const ahead = this.readAhead;
    if (this.done || ahead === undefined || this.request !== undefined || this.awaitingOutput) return;
    this.readAhead = undefined;
    this.started = true;
    this.since = this.host.clock;
    this.parse(ahead, 0);
    if (this.done || this.request !== undefined || this.readAhead !== undefined) return;
    if (this.clientEnded) this.endOfInput();
    else if (!this.awaitingOutput && this.socket.isPaused()) this.socket.resume();
  }

  private onParseError(): void {
    const error = this.parser.error!;
    this.refuse(error.status, true);
  }

  /** Answers a refused request (if no response is under way) and closes. */
  private refuse(status: number, answer: boolean): void {
    this.done = true;
    this.parser.stop();
    const response = this.response;
    if (!answer || response?.headersSent === true || !this.socket.writable) {
      this.socket.destroy();
      return;
    }
    if (this.body !== undefined) this.body.destroy(new Error('request body refused'));
    this.endConnection(refusal(status));
  }

  /**
   * Ends the proxy's side after `last`. What the client still sends is read and dropped (closing with unread
   * bytes would reset the connection under the answer); the sweep destroys the socket if the client keeps it.
   */
  private endConnection(last: string | undefined): void {
    this.done = true;
    this.parser.stop();
    this.endedAt = this.host.clock;
    const socket = this.socket;
    if (last === undefined) socket.end();
    else socket.end(last, 'latin1');
    if (socket.isPaused()) socket.resume();
  }

  private startUpgrade(head: Buffer): void {
    this.done = true;
    const request = this.request!;
    this.request = undefined;
    const socket = this.socket;
    this.detach();
    // As node:http does: bytes (and an 'end') arriving before the upgrade's handler reads stay buffered in the
    // socket; its first 'data' listener or pipe() starts the flow again.
    (socket as { readableFlowing: boolean | null }).readableFlowing = null;
    this.host.onUpgrade(request, socket, head);
  }

  /**
   * The socket holds more unsent bytes than its high-water mark: reading pauses (unread bytes stay in the
   * socket or in readAhead) until 'drain', so a client that does not read cannot make the proxy buffer answers.
   */
  private outputBacklogged(): boolean {
    if (!this.socket.writableNeedDrain) return false;
    this.awaitingOutput = true;
    this.socket.pause();
    return true;
  }

  onDrain(): void {
    if (this.awaitingOutput) {
      this.awaitingOutput = false;
      if (this.request === undefined && !this.done) {
        if (this.socket.isPaused() && (this.readAhead?.length ?? 0) <= MAX_READ_AHEAD) this.socket.resume();
        if (this.readAhead !== undefined) process.nextTick(parseLater, this);
      }
    }
    const response = this.response;
    if (response?.awaitingDrain) {
      response.awaitingDrain = false;
      response.listener?.onResponseDrain();
    }
  }

  onEnd(): void {
    // The client finished sending: requests it sent in full are still answered, in order.
    this.clientEnded = true;
    if (this.done) return;
    // An upload cut short cannot be forwarded whole.
    if (this.bodyOpen) this.socket.destroy();
    else if (this.request === undefined && this.readAhead === undefined) this.endOfInput();
  }

  /** Nothing more will arrive: close at a request boundary, or refuse the half request left. */
  private endOfInput(): void {
    if (this.parser.idle) this.endConnection(undefined);
    else this.refuse(400, true);
  }

  onClose(): void {
    this.done = true;
    this.host.forget(this);
    if (this.body !== undefined) {
      this.body.destroy(new Error('client closed the connection'));
      this.body = undefined;
    }
    const response = this.response;
    this.response = undefined;
    response?.close();
  }
}

// Shared socket listeners (no closures per connection): the socket knows its connection.
const CONNECTION = Symbol('portico.client-connection');
type OwnedSocket = Socket & { [CONNECTION]?: ClientConnection };
function onSocketData(this: OwnedSocket, chunk: Buffer): void {
  this[CONNECTION]?.onData(chunk);
}
function onSocketDrain(this: OwnedSocket): void {
  this[CONNECTION]?.onDrain();
}
function onSocketEnd(this: OwnedSocket): void {
  this[CONNECTION]?.onEnd();
}
function onSocketClose(this: OwnedSocket): void {
  this[CONNECTION]?.onClose();
}

function parseLater(connection: ClientConnection): void {
  connection.parseAhead();
}

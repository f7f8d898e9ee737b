// One request toward an h2c upstream, on a stream of a pooled session: the body streamed with flow control,
// the response head, data and trailers handed to the sink, the stream reset when the client goes away.
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  constants,
  type IncomingHttpHeaders,
  type IncomingHttpStatusHeader,
  type OutgoingHttpHeaders,
} from 'node:http2';
import type { RequestBody } from '../exchange.js';
import { headerLines, headerObject } from '../wire/h2-header-block.js';
import { awaitUpstreamDrain, sendStallMessage } from './send-stall.js';
import { type UpstreamCall, UpstreamError, type UpstreamErrorKind, type UpstreamSink } from './upstream.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_FLAG_END_STREAM } = constants;

/** What the exchange needs from the session pool it runs on. */
export interface StreamSlot {
  /** The stream ended (its slot on the session is free again). */
  streamDone(session: ClientHttp2Session): void;
  /** A request body the upstream takes nothing of for this long fails the exchange. */
  readonly sendTimeoutMs: number;
}

export class H2UpstreamExchange implements UpstreamCall {
  done = false;
  private stream: ClientHttp2Stream | undefined = undefined;
  private trailers: string[] | undefined = undefined;
  private responded = false;

  constructor(
    readonly headers: OutgoingHttpHeaders,
    readonly body: RequestBody | null,
    /** A HEAD request: no response body whatever the headers say. */
    readonly noResponseBody: boolean,
    readonly sink: UpstreamSink,
  ) {}

  get requestId(): string | undefined {
    const id = this.headers['x-request-id'];
    return typeof id === 'string' ? id : undefined;
  }

  /** Opens the stream on `session` (which has room for it). */
  start(session: ClientHttp2Session, slot: StreamSlot): void {
    let stream: ClientHttp2Stream;
    try {
      // A body's end waits for its trailers (none: Node ends the stream with an empty DATA frame).
      const body = this.body !== null;
      stream = session.request(this.headers, { endStream: !body, waitForTrailers: body });
    } catch (error) {
      // A session that went away between the pick and the request (GOAWAY, destroyed): safe to retry.
      slot.streamDone(session);
      this.fail(`upstream session unusable: ${(error as Error).message}`, 'reset');
      return;
    }
    this.stream = stream;
    stream.on('response', (headers, flags) => this.onResponse(headers, flags));
    stream.on('data', (chunk: Buffer) => {
      if (!this.done && !this.sink.onUpstreamData(chunk)) stream.pause();
    });
    stream.on('trailers', (trailers: IncomingHttpHeaders) => {
      this.trailers = headerLines(trailers);
    });
    stream.on('end', () => {
      // Node ends the readable side of a stream that was reset or lost its session too: not a complete response.
      const code = stream.rstCode ?? NGHTTP2_NO_ERROR;
      if (code === NGHTTP2_NO_ERROR) this.complete();
      else this.fail(`upstream stream reset (code ${code})`, this.responded ? 'error' : 'reset');
    });
    stream.on('error', () => {});
    stream.on('close', () => {
      slot.streamDone(session);
      if (this.done) return;
      const code = stream.rstCode ?? 0;
      // REFUSED_STREAM (or a GOAWAY that left the stream unprocessed) means the upstream did nothing with it.
      const kind: UpstreamErrorKind = code === NGHTTP2_REFUSED_STREAM || !this.responded ? 'reset' : 'error';
      this.fail(`upstream stream closed (code ${code})`, kind);
    });
    if (this.body !== null) this.sendBody(stream, this.body, slot.sendTimeoutMs);
  }

  private sendBody(stream: ClientHttp2Stream, body: RequestBody, sendTimeoutMs: number): void {
    const resume = (): void => {
      body.resume();
    };
    const onStall = (): void => {
      if (this.done || stream.writableEnded) return;
      this.fail(sendStallMessage(sendTimeoutMs), 'send_timeout');
      if (!stream.closed) stream.close(NGHTTP2_CANCEL);
    };
    stream.once('wantTrailers', () => {
      const trailers = body.trailers;
      if (stream.destroyed || stream.closed) return;
      try {
        stream.sendTrailers(trailers === undefined ? {} : headerObject(trailers, {}, false));
      } catch {
        // Trailers Node will not send (they came from the client): the body ends without them.
        if (!stream.destroyed && !stream.closed) stream.sendTrailers({});
      }
    });
    body.on('data', (chunk: Buffer) => {
      if (this.done) return;
      // Backpressure: stop reading from the client while the upstream's window is full, within the send deadline.
      if (!stream.write(chunk)) awaitUpstreamDrain(body, stream, sendTimeoutMs, resume, onStall);
    });
    body.on('end', () => {
      if (!this.done) stream.end();
    });
  }

  private onResponse(headers: IncomingHttpHeaders & IncomingHttpStatusHeader, flags: number): void {
    if (this.done) return;
    const status = headers[':status'] ?? 502;
    // Interim responses come as 'headers' events, never here.
    this.responded = true;
    // A head that ends the stream (a gRPC trailers-only answer) goes on with that end, as one frame.
    const ended = (flags & NGHTTP2_FLAG_END_STREAM) !== 0 || this.noResponseBody;
    this.sink.onUpstreamHead(status, { rawHeaders: headerLines(headers) }, !ended);
    if (ended) this.complete();
  }

  private complete(): void {
    if (this.done) return;
    // A stream that ends (Node also ends it when its session is destroyed) without a response head is a failure.
    if (!this.responded) {
      this.fail('upstream stream ended without a response', 'reset');
      return;
    }
    this.done = true;
    const stream = this.stream;
    // A body the upstream answered before reading: let it flow on to nowhere, else the client stalls.
    if (this.body !== null && !this.body.readableEnded) this.body.resume();
    if (stream !== undefined && !stream.closed) {
      // A HEAD answer's body is not wanted; a complete answer to an upload still being sent ends the upload
      // (RFC 9113 §8.1), or the stream, and its slot on the session, would stay open.
      if (this.noResponseBody) stream.close(NGHTTP2_CANCEL);
      else if (!stream.writableEnded) stream.close(NGHTTP2_NO_ERROR);
    }
    this.sink.onUpstreamEnd(undefined, this.trailers);
  }

  private fail(message: string, kind: UpstreamErrorKind): void {
    if (this.done) return;
    this.done = true;
    if (this.body !== null && !this.body.readableEnded) this.body.resume();
    this.sink.onUpstreamError(new UpstreamError(message, kind));
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    const stream = this.stream;
    if (stream !== undefined && !stream.closed) stream.close(NGHTTP2_CANCEL);
  }

  resume(): void {
    this.stream?.resume();
  }
}

// One response on an HTTP/2 stream: the head is held until the first body bytes, the end (so a response
// without body or trailers goes out as one HEADERS frame with END_STREAM, as gRPC's trailers-only answers
// need) or sendHead (the upstream's head came alone: a streaming client waits for it); hop-by-hop fields are
// dropped (HTTP/2 forbids them), and trailers follow the data when there are any and the client said it takes
// them (`te: trailers`, as every gRPC client does); for the others the response ends with its last DATA frame,
// without waiting for trailers that would be dropped anyway (one frame and event fewer).
import { constants, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { ProxyResponse, ResponseListener } from '../../exchange.js';
import { headerObject } from '../../wire/h2-header-block.js';

const { NGHTTP2_NO_ERROR } = constants;
/** Why a response was cut: the stream's own error listener ignores it, the client sees INTERNAL_ERROR. */
const RESPONSE_CUT = new Error('response cut: its upstream failed mid-body');

/**
 * Node still takes frames on the stream: respond() and sendTrailers() throw on a stream that is destroyed or
 * closed (a client's RST_STREAM(NO_ERROR) closes it, and a request body still unread keeps it from being
 * destroyed), and a throw from an event handler ends the process.
 */
function open(stream: ServerHttp2Stream): boolean {
  return !stream.destroyed && !stream.closed;
}

/** What the stream's session learns from its responses. */
export interface StreamOwner {
  /** The proxy reset this stream on purpose: not a client's doing. */
  resetByProxy(stream: ServerHttp2Stream): void;
}

export class H2Response implements ProxyResponse {
  statusCode = 200;
  headersSent = false;
  writableFinished = false;
  bodyBytesSent = 0;
  readonly protocol = 'HTTP/2';
  listener: ResponseListener | undefined = undefined;
  private pendingHead: OutgoingHttpHeaders | undefined = undefined;
  private trailers: string[] | undefined = undefined;
  private closed = false;
  private readonly onDrain = (): void => this.listener?.onResponseDrain();

  constructor(
    private readonly stream: ServerHttp2Stream,
    private readonly owner: StreamOwner,
    readonly grpc: boolean,
    private readonly headRequest: boolean,
    /** The client sent `te: trailers`. */
    private readonly acceptsTrailers: boolean,
  ) {
    stream.on('drain', this.onDrain);
  }

  writeHead(status: number, lines: string[], validate = false): void {
    if (this.headersSent) throw new Error('response head already written');
    this.pendingHead = headerObject(lines, { ':status': status }, validate);
    this.statusCode = status;
    this.headersSent = true;
  }

  write(chunk: Buffer): boolean {
    if (this.closed || this.writableFinished || !open(this.stream)) return true;
    this.flushHead();
    if (chunk.length === 0 || this.headRequest) return true;
    this.bodyBytesSent += chunk.length;
    // A copy: the upstream client may hand views of a buffer it reuses.
    return this.stream.write(Buffer.from(chunk));
  }

  end(chunk?: Buffer, trailers?: string[]): void {
    if (this.closed || this.writableFinished) return;
    if (!this.headersSent) this.writeHead(this.statusCode, ['content-length', '0']);
    this.writableFinished = true;
    const stream = this.stream;
    if (open(stream)) {
      const hasBody = chunk !== undefined && chunk.length > 0 && !this.headRequest;
      const hasTrailers = this.acceptsTrailers && trailers !== undefined && trailers.length > 0;
      if (this.pendingHead !== undefined && !hasBody && !hasTrailers) {
        // Head and end in one frame (a gRPC trailers-only answer must stay one).
        const head = this.pendingHead;
        this.pendingHead = undefined;
        stream.respond(head, { endStream: true });
      } else {
        this.trailers = hasTrailers ? trailers : undefined;
        this.flushHead();
        if (hasBody) {
          this.bodyBytesSent += chunk.length;
          stream.end(Buffer.from(chunk));
        } else stream.end();
      }
    }
    this.close();
  }

  abort(status: number): void {
    if (this.closed || this.writableFinished) return;
    const stream = this.stream;
    if (!this.headersSent && open(stream)) {
      this.statusCode = status;
      stream.respond({ ':status': status, server: 'portico', 'content-length': '0' }, { endStream: true });
    }
    // RST_STREAM(NO_ERROR) after the answer: the client stops sending the rest of its body (RFC 9113 §8.1). A turn
    // later: Node 26 sends a reset asked for in the same turn as the answer before the answer's HEADERS.
    this.owner.resetByProxy(stream);
    setImmediate(() => {
      if (!stream.destroyed) stream.close(NGHTTP2_NO_ERROR);
    });
    this.close();
  }

  destroy(): void {
    this.owner.resetByProxy(this.stream);
    // Destroyed with an error: RST_STREAM(INTERNAL_ERROR) at once. close() would first end the writable side, and a
    // response that asked for no trailers would then reach the client as a short but complete one.
    if (!this.stream.destroyed) this.stream.destroy(RESPONSE_CUT);
    this.close();
  }

  sendHead(): void {
    if (this.closed || !open(this.stream)) return;
    this.flushHead();
  }

  /** Reports the end once (from end(), or from the session when the stream closed first). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stream.off('drain', this.onDrain);
    this.listener?.onResponseClose();
  }

  private flushHead(): void {
    const head = this.pendingHead;
    if (head === undefined) return;
    this.pendingHead = undefined;
    if (!this.acceptsTrailers) {
      this.stream.respond(head);
      return;
    }
    // Trailers can only follow when asked for with the head; the body's end sends them (or an empty DATA frame).
    this.stream.respond(head, { waitForTrailers: true });
    this.stream.once('wantTrailers', () => this.sendTrailers());
  }

  private sendTrailers(): void {
    const lines = this.trailers;
    this.trailers = undefined;
    const stream = this.stream;
    if (!open(stream)) return;
    try {
      stream.sendTrailers(lines === undefined ? {} : headerObject(lines, {}, true));
    } catch {
      // Trailers Node will not send (odd characters): end without them.
      try {
        stream.sendTrailers({});
      } catch {
        // Not even those: the stream would wait for them forever.
        this.owner.resetByProxy(stream);
        stream.destroy(RESPONSE_CUT);
      }
    }
  }
}

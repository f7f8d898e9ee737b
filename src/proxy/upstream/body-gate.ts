// A request body takes an upstream connection only once it is complete or `limit` bytes are in: a client that
// sends slowly holds no connection of the pool while it does, so a few slow uploads cannot starve an endpoint.
// Bodies larger than the limit stream on from there (the stall timeout still bounds a body that stops).
import { Readable } from 'node:stream';
import type { BodyLimit, RequestBody } from '../exchange.js';

/** The buffered chunks first, then the rest of the source (if it had not ended), with backpressure. */
export class ReplayBody extends Readable implements RequestBody {
  trailers: string[] | undefined = undefined;
  /** What the client sent: the source's count (a replay sends those bytes again, it receives none). */
  get received(): number {
    return this.source.received;
  }
  /** The limit is the source's, checked where its bytes arrive. */
  get limit(): BodyLimit | undefined {
    return this.source.limit;
  }
  set limit(limit: BodyLimit | undefined) {
    this.source.limit = limit;
  }
  private readonly rest: RequestBody | null;

  constructor(
    private readonly chunks: readonly Buffer[],
    private readonly source: RequestBody,
    private readonly ended: boolean,
  ) {
    super();
    for (const chunk of chunks) this.push(chunk);
    if (ended) {
      this.rest = null;
      this.trailers = source.trailers;
      this.push(null);
      return;
    }
    const rest = source;
    this.rest = rest;
    rest.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) rest.pause();
    });
    rest.on('end', () => {
      this.trailers = rest.trailers;
      this.push(null);
    });
    // A client gone mid-body: whoever reads learns it from 'close' (as from the request body itself).
    rest.on('close', () => {
      if (!rest.readableEnded) this.destroy();
    });
    this.on('error', () => {});
  }

  override _read(): void {
    this.rest?.resume();
  }

  /** The same body once more, for a retry: only a body that was whole within the gate can be sent again. */
  again(): ReplayBody | undefined {
    return this.ended ? new ReplayBody(this.chunks, this.source, true) : undefined;
  }
}

export class BodyGate {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private open = true;
  private readonly onData = (chunk: Buffer): void => {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size >= this.limit) this.release(false);
  };
  private readonly onEnd = (): void => this.release(true);

  constructor(
    private readonly source: RequestBody,
    private readonly limit: number,
    private readonly ready: (body: RequestBody) => void,
  ) {
    source.on('data', this.onData);
    source.on('end', this.onEnd);
  }

  /** The request went away (or timed out) before the body was in: stop listening. */
  cancel(): void {
    if (!this.open) return;
    this.open = false;
    this.detach();
  }

  private release(ended: boolean): void {
    if (!this.open) return;
    this.open = false;
    this.detach();
    if (!ended) this.source.pause();
    this.ready(new ReplayBody(this.chunks, this.source, ended));
  }

  private detach(): void {
    this.source.off('data', this.onData);
    this.source.off('end', this.onEnd);
  }
}

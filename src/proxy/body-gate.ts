// A request body takes an upstream connection only once it is complete or `limit` bytes are in: a client that
// sends slowly holds no connection of the pool while it does, so a few slow uploads cannot starve an endpoint.
// Bodies larger than the limit stream on from there (the stall timeout still bounds a body that stops).
import { Readable } from 'node:stream';

/** The buffered chunks first, then the rest of the source (if it had not ended), with backpressure. */
class ReplayBody extends Readable {
  constructor(
    chunks: readonly Buffer[],
    private readonly rest: Readable | null,
  ) {
    super();
    for (const chunk of chunks) this.push(chunk);
    if (rest === null) {
      this.push(null);
      return;
    }
    rest.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) rest.pause();
    });
    rest.on('end', () => this.push(null));
    // A client gone mid-body: whoever reads learns it from 'close' (as from the request body itself).
    rest.on('close', () => {
      if (!rest.readableEnded) this.destroy();
    });
    this.on('error', () => {});
  }

  override _read(): void {
    this.rest?.resume();
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
    private readonly source: Readable,
    private readonly limit: number,
    private readonly ready: (body: Readable) => void,
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
    this.ready(new ReplayBody(this.chunks, ended ? null : this.source));
  }

  private detach(): void {
    this.source.off('data', this.onData);
    this.source.off('end', this.onEnd);
  }
}

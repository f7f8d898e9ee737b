// What one downstream HTTP/2 connection may hold upstream at once. Its streams multiplex, and each request holds
// an upstream connection (HTTP/1.1) or stream (h2c) until its response is delivered: a client that opens many
// streams and reads none (zero windows) would hold as many upstream connections as it has streams, an
// endpoint's whole pool for the route timeout, again and again. Past the share, its requests wait for one of its
// own to end, in order; other clients' requests never wait on it.

export class UpstreamShare {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    /** The connection is gone: its waiting requests are ending too, none is started. */
    private readonly gone: () => boolean,
  ) {}

  /** Runs `start` now when a place is free (taking it), else when one of this connection's places frees. */
  take(start: () => void): void {
    if (this.held < this.max) {
      this.held++;
      start();
    } else this.waiting.push(start);
  }

  /**
   * A place taken by take() is free: the longest-waiting request takes it, on the next turn, so the resets a
   * client sent with the one that freed it (in the same read) are taken first: a request reset meanwhile
   * starts nothing and passes the place on.
   */
  give(): void {
    const next = this.gone() ? undefined : this.waiting.shift();
    if (next === undefined) this.held--;
    else setImmediate(next);
  }
}

// Counts stream resets in a fixed window, per session and per client address: those a client sends (rapid reset,
// CVE-2023-44487) and those the server sends over a client's error ("MadeYouReset", CVE-2025-8671; Node 20's
// nghttp2 1.61 has no glitch limiter of its own). Streams the proxy resets on purpose are not counted.

export class ResetGuard {
  private windowStart = Number.NEGATIVE_INFINITY;
  private count = 0;

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** One more reset at `now` (ms); true when the session went over its bound. */
  add(now: number): boolean {
    if (this.expired(now)) {
      this.windowStart = now;
      this.count = 0;
    }
    this.count++;
    return this.count > this.max;
  }

  /** The current window has ended at `now`. */
  expired(now: number): boolean {
    return now - this.windowStart >= this.windowMs;
  }

  /** Over the bound in a window that has not ended at `now`. */
  over(now: number): boolean {
    return this.count > this.max && !this.expired(now);
  }
}

/**
 * The same count per client address across all its sessions: a client that opens a new connection each time one is
 * cut (CVE-2023-44487 with connection churn) stays within one budget. A source over it has its sessions cut and its
 * new HTTP/2 connections closed at once until its window ends. Sources are forgotten when their window passed; at
 * most `maxSources` are kept (the oldest dropped first), so a flood from many addresses cannot grow the table.
 */
export class SourceResets {
  private readonly sources = new Map<string, ResetGuard>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly maxSources = 4096,
  ) {}

  /** One more reset from `source` at `now`; true when the source is over its budget. */
  add(source: string, now: number): boolean {
    let guard = this.sources.get(source);
    if (guard === undefined) {
      if (this.sources.size >= this.maxSources) this.prune(now);
      guard = new ResetGuard(this.max, this.windowMs);
      this.sources.set(source, guard);
    }
    return guard.add(now);
  }

  /** `source` went over its budget in a window that has not ended. */
  refuses(source: string, now: number): boolean {
    const guard = this.sources.get(source);
    return guard?.over(now) === true;
  }

  private prune(now: number): void {
    for (const [source, guard] of this.sources) if (guard.expired(now)) this.sources.delete(source);
    // Still full: the oldest entries go (insertion order).
    for (const source of this.sources.keys()) {
      if (this.sources.size < this.maxSources) break;
      this.sources.delete(source);
    }
  }
}

// Counts the stream resets of one session in a fixed window: those a client sends (rapid reset,
// CVE-2023-44487) and those the server sends over a client's error ("MadeYouReset", CVE-2025-8671; Node 20's
// nghttp2 1.61 has no glitch limiter of its own). Streams the proxy resets on purpose are not counted.

export class ResetGuard {
  private windowStart = 0;
  private count = 0;

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** One more reset at `now` (ms); true when the session went over its bound. */
  add(now: number): boolean {
    if (now - this.windowStart >= this.windowMs) {
      this.windowStart = now;
      this.count = 0;
    }
    this.count++;
    return this.count > this.max;
  }
}

// Reconnect delays: exponential from initialMs, capped at maxMs, with jitter so a fleet does not reconnect in step.

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** The delay before reconnect attempt `failures` (0 for the first retry): between half and all of the ceiling. */
export function reconnectDelayMs(
  failures: number,
  backoff: Backoff,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(failures, 30));
  return ceiling / 2 + random() * (ceiling / 2);
}

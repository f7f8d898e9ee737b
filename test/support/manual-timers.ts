// Retry timers a test fires by hand, with a clock that moves only when one fires: backoff is tested without waiting.
import assert from 'node:assert/strict';

/** Retry timers held by the test: fired by hand, never by the clock. */
export function manualTimers() {
  let clock = 0;
  const pending: { at: number; fire: () => void }[] = [];
  return {
    now: () => clock,
    setTimer(ms: number, fire: () => void) {
      const entry = { at: clock + ms, fire };
      pending.push(entry);
      return () => {
        const i = pending.indexOf(entry);
        if (i >= 0) pending.splice(i, 1);
      };
    },
    waits: () => pending.map((p) => p.at - clock),
    /** Moves the clock to the next retry and fires it. */
    next() {
      pending.sort((a, b) => a.at - b.at);
      const entry = pending.shift();
      assert.ok(entry, 'a retry is due');
      clock = entry.at;
      entry.fire();
    },
  };
}

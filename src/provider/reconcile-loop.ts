// Coalescing reconcile scheduler: any number of triggers while a pass runs lead to exactly one more pass.
export interface ReconcileLoop {
  /** Schedules a pass on the next turn of the event loop (many calls, one pass). */
  soon(): void;
  /** Runs a pass now (or after the running one) and resolves when it is done. */
  now(): Promise<void>;
  stop(): void;
}

export function createReconcileLoop(
  pass: () => Promise<void>,
  onError: (error: unknown) => void,
): ReconcileLoop {
  let running: Promise<void> | undefined;
  let again = false;
  let scheduled = false;
  let stopped = false;

  async function drive(): Promise<void> {
    do {
      again = false;
      try {
        await pass();
      } catch (error) {
        onError(error);
      }
    } while (again && !stopped);
  }

  function now(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = drive().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    soon() {
      if (scheduled || stopped) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        void now();
      });
    },
    now,
    stop() {
      stopped = true;
    },
  };
}

// How file events become batches: events are gathered while a window is open, and the work each batch causes
// runs one batch at a time, in order.

export interface GatherWindow {
  /** Opens a window unless one is open; `onClosed` runs when it closes. */
  open(): void;
  /** Whether a window is open (an event now joins the batch being gathered). */
  readonly isOpen: boolean;
  /** Closes an open window without running `onClosed`. */
  cancel(): void;
}

/** `debounceMs` 0: the window takes the events already queued, on the next turn of the event loop. */
export function gatherWindow(debounceMs: number, onClosed: () => void): GatherWindow {
  let cancel: (() => void) | undefined;
  const close = (): void => {
    cancel = undefined;
    onClosed();
  };
  return {
    open() {
      if (cancel !== undefined) return;
      // setTimeout waits at least 1 ms even for 0; setImmediate runs right after this turn's other events.
      if (debounceMs > 0) {
        const timer = setTimeout(close, debounceMs);
        cancel = () => clearTimeout(timer);
      } else {
        const immediate = setImmediate(close);
        cancel = () => clearImmediate(immediate);
      }
    },
    get isOpen() {
      return cancel !== undefined;
    },
    cancel() {
      cancel?.();
    },
  };
}

export interface SerialQueue {
  /** Runs `work` once all work queued before it is done; what it throws goes to the queue's `onError`. */
  enqueue(work: () => Promise<void>): void;
  /** Resolves once the work queued so far is done. */
  idle(): Promise<void>;
}

export function serialQueue(onError: (error: unknown) => void): SerialQueue {
  let running: Promise<void> = Promise.resolve();
  return {
    enqueue(work) {
      running = running.then(work).catch(onError);
    },
    idle: () => running,
  };
}

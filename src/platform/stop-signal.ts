// Every long-running subcommand stops the same way: on the first SIGINT or SIGTERM, then cleans up gracefully.

export type StopSignal = 'SIGINT' | 'SIGTERM';

/** Resolves with the first SIGINT or SIGTERM; the handlers are removed again, so a second signal is default. */
export function stopSignal(): Promise<StopSignal> {
  return new Promise((resolve) => {
    const onInt = (): void => done('SIGINT');
    const onTerm = (): void => done('SIGTERM');
    function done(signal: StopSignal): void {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve(signal);
    }
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
  });
}

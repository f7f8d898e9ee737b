// Output nobody reads any more must not end the process: a proxy outlives the controller whose pipe it may have
// inherited, and a controller outlives a closed terminal. Writes to a stream whose reader is gone (EPIPE, or the
// stream destroyed after it) are dropped; any other write error is still fatal, as before.
const GONE_READER = new Set(['EPIPE', 'ERR_STREAM_DESTROYED', 'ECONNRESET']);

export function quietBrokenOutput(streams: NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (GONE_READER.has(error.code ?? '')) return;
      throw error;
    });
  }
}

// Two byte streams joined: each side's bytes go to the other as they come, at the pace the slower reader takes
// them (a source is paused while its destination is full), and a side that ends its writing (FIN, or TLS
// close_notify) ends the other's (half-close), while the other direction keeps flowing until it ends too.
// Written with a `data` listener per direction rather than `pipe`, which sets up and tears down half a dozen
// listeners per direction: at a connection per request that is a measurable share of a relay's CPU.
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface RelayEnd {
  /** The first error either side had; undefined: both ended cleanly. */
  error: Error | undefined;
  /** Which side failed first. */
  failed: 'client' | 'upstream' | undefined;
}

/** Every upstream read by `directReads` lands here first: one buffer for the whole process, never held. */
const READS = Buffer.allocUnsafe(64 * 1024);

/**
 * A plain TCP upstream's reads written to `to` without the stream machinery (net's `onread`): each read lands in
 * one buffer the process shares, and leaves it at once as a copy of its own size (a small one from Node's buffer
 * pool), so a write Node could not finish at once never holds memory the next read overwrites, and an idle
 * connection holds no buffer. Give it to `connect` as `onread`; `relay` joins such a socket as any other.
 */
export function directReads(to: Duplex): { buffer: Buffer; callback: (n: number, b: Buffer) => boolean } {
  // false pauses the socket (net stops reading it); `to`'s drain resumes it.
  return {
    buffer: READS,
    callback: (n, b) => {
      const bytes = Buffer.allocUnsafe(n);
      b.copy(bytes, 0, 0, n);
      return to.write(bytes);
    },
  };
}

/**
 * `from`'s bytes to `to`: `from` paused while `to` is full, resumed when it drains. A socket read by `directReads`
 * emits no `data` (its reads are already written); its pause and resume, and its end, take the same path.
 */
function flow(from: Duplex, to: Duplex): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => from.resume());
  from.once('end', () => to.end());
}

/** Joins `client` and `upstream`; `done` runs once, when both are closed. */
export function relay(client: Duplex, upstream: Duplex, done: (end: RelayEnd) => void): void {
  const end: RelayEnd = { error: undefined, failed: undefined };
  let open = 2;
  const closed = () => {
    if (--open === 0) done(end);
  };
  const fail = (side: 'client' | 'upstream', error: Error) => {
    if (end.error === undefined) {
      end.error = error;
      end.failed = side;
    }
    // A failed side cannot finish its direction: cut both, nothing is left to relay. A reset goes on as a reset,
    // so that the other peer learns the connection failed rather than ended (the native relay does the same).
    const other = side === 'client' ? upstream : client;
    if ((error as NodeJS.ErrnoException).code === 'ECONNRESET' && other instanceof Socket && !other.destroyed)
      other.resetAndDestroy();
    client.destroy();
    upstream.destroy();
  };
  client.on('error', (error) => fail('client', error));
  upstream.on('error', (error) => fail('upstream', error));
  // A side closed without error after both directions ended; one torn down early takes the other with it.
  client.once('close', () => {
    if (!upstream.destroyed && !upstream.writableFinished) upstream.destroy();
    closed();
  });
  upstream.once('close', () => {
    if (!client.destroyed && !client.writableFinished) client.destroy();
    closed();
  });
  flow(client, upstream);
  flow(upstream, client);
}

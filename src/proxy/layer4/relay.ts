// Two byte streams joined: each side's bytes go to the other as they come, at the pace the slower reader takes
// them (pipe pauses a source whose destination is full), and a side that ends its writing (FIN, or TLS
// close_notify) ends the other's (half-close), while the other direction keeps flowing until it ends too.
import type { Duplex } from 'node:stream';

export interface RelayEnd {
  /** The first error either side had; undefined: both ended cleanly. */
  error: Error | undefined;
  /** Which side failed first. */
  failed: 'client' | 'upstream' | undefined;
}

/** Joins `client` and `upstream`; `done` runs once, when both are closed. */
export function relay(client: Duplex, upstream: Duplex, done: (end: RelayEnd) => void): void {
  const end: RelayEnd = { error: undefined, failed: undefined };
  let open = 2;
  const closed = () => {
    if (--open === 0) done(end);
  };
  const fail = (side: 'client' | 'upstream') => (error: Error) => {
    if (end.error === undefined) {
      end.error = error;
      end.failed = side;
    }
    // A failed side cannot finish its direction: cut both, nothing is left to relay.
    client.destroy();
    upstream.destroy();
  };
  client.on('error', fail('client'));
  upstream.on('error', fail('upstream'));
  // A side closed without error after both directions ended; one torn down early takes the other with it.
  client.on('close', () => {
    if (!upstream.destroyed && !upstream.writableFinished) upstream.destroy();
    closed();
  });
  upstream.on('close', () => {
    if (!client.destroyed && !client.writableFinished) client.destroy();
    closed();
  });
  client.pipe(upstream);
  upstream.pipe(client);
}

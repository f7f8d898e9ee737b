// The discovery server's streams: each proxy's call with what the server knows of it, and how a stream ends —
// refused with a status (`fail`), or gone (`drop`) — and the deadline of a credential that expires.
import { Metadata, type ServerDuplexStream, status } from '@grpc/grpc-js';
import type { Logger } from '../platform/log-line.js';
import { createTokenBucket, type RateLimit, type TokenBucket } from '../platform/token-bucket.js';
import type { ClientMessage, ServerMessage } from './protocol.js';
import type { NodeState } from './server-types.js';

export type Call = ServerDuplexStream<ClientMessage, ServerMessage>;

export interface Stream {
  id: number;
  call: Call;
  state: NodeState;
  subscribed: boolean;
  closed: boolean;
  /** Set after a Nack: the proxy ignores deltas until it gets the whole fleet again. */
  needsFull: boolean;
  /** The version of the last full message sent: a Nack of something older needs no second one. */
  fullSentVersion?: string;
  timers: NodeJS.Timeout[];
  /** Acks and Nacks beyond this bucket's rate are coalesced: only the latest waits, in `deferred`. */
  reports: TokenBucket;
  deferred?: ClientMessage;
  deferTimer?: NodeJS.Timeout;
  /** What the node reported last, so a repeated report changes nothing. */
  reported: string;
}

export interface StreamSet {
  open(call: Call): Stream;
  /** Ends the stream with a status the proxy sees, and logs why. */
  fail(stream: Stream, code: status, details: string): void;
  /** Forgets the stream (it ended, or was failed). */
  drop(stream: Stream): void;
  /** Fails the stream once `expiresAt` (ms since the epoch) passes. */
  expireAt(stream: Stream, expiresAt: number): void;
  all(): Stream[];
}

// setTimeout cannot wait longer than 2^31-1 ms; longer expiries re-arm.
const MAX_TIMER_MS = 2_147_483_647;

export function createStreamSet(options: {
  log: Logger;
  reportRate: RateLimit;
  /** A subscribed stream went: unsubscribe it. */
  onDropped: (stream: Stream) => void;
}): StreamSet {
  const streams = new Set<Stream>();
  let counter = 0;

  function drop(stream: Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    for (const timer of stream.timers) clearTimeout(timer);
    clearTimeout(stream.deferTimer);
    delete stream.deferred;
    streams.delete(stream);
    if (stream.subscribed) options.onDropped(stream);
  }

  function fail(stream: Stream, code: status, details: string): void {
    if (stream.closed) return;
    options.log.info(
      `discovery: closing stream ${stream.id} (${describeStream(stream)}): ${status[code]}: ${details}`,
    );
    stream.call.emit('error', { code, details, metadata: new Metadata() });
    drop(stream);
  }

  function expireAt(stream: Stream, expiresAt: number): void {
    if (stream.closed) return;
    const wait = expiresAt - Date.now();
    if (wait <= 0) {
      fail(stream, status.UNAUTHENTICATED, 'token expired; reconnect with a fresh token');
      return;
    }
    stream.timers.push(setTimeout(() => expireAt(stream, expiresAt), Math.min(wait, MAX_TIMER_MS)));
  }

  return {
    open(call) {
      const id = ++counter;
      const stream: Stream = {
        id,
        call,
        state: {
          stream: id,
          node: '',
          fleet: '',
          connectedAt: new Date().toISOString(),
          appliedGateways: {},
          listenerErrors: [],
        },
        subscribed: false,
        closed: false,
        needsFull: false,
        timers: [],
        reports: createTokenBucket(options.reportRate),
        reported: '',
      };
      streams.add(stream);
      return stream;
    },
    fail,
    drop,
    expireAt,
    all: () => [...streams],
  };
}

export function describeStream(stream: Stream): string {
  return stream.state.node === ''
    ? `stream ${stream.id}`
    : `node '${stream.state.node}' of fleet '${stream.state.fleet}'`;
}

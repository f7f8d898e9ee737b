// Multiplexed h2c sessions per upstream endpoint: a stream goes on the first session with room (the peer's
// SETTINGS_MAX_CONCURRENT_STREAMS, capped by ours), another session opens when all are full (up to a cap, then
// a queue). A session that receives GOAWAY takes no new stream and leaves the pool at once (its streams
// finish); one idle for the idle timeout is closed.
import { type ClientHttp2Session, connect } from 'node:http2';
import { connect as connectTcp, type Socket } from 'node:net';
import type { Http2Limits } from '../options.js';
import type { H2UpstreamExchange, StreamSlot } from './h2c-exchange.js';

export interface H2PoolOptions {
  limits: Http2Limits;
  idleTimeoutMs: number;
  connectTimeoutMs: number;
  /** A request body the upstream takes nothing of for this long fails its exchange. */
  sendTimeoutMs: number;
}

interface PooledSession {
  session: ClientHttp2Session;
  /** Ours, not the session's: Node ends a closed session's socket but waits forever for a peer that keeps it. */
  socket: Socket;
  active: number;
  /** Streams it may carry at once: ours, lowered to the peer's SETTINGS_MAX_CONCURRENT_STREAMS once known. */
  capacity: number;
  idleTimer: NodeJS.Timeout | undefined;
  /** Out of the pool (GOAWAY, idle, closing): no new stream; its socket goes once its streams are done. */
  left: boolean;
}

/** How long a retired session's socket may wait for the peer to close it once its streams are done. */
const LINGER_MS = 1000;

function cutSocket(socket: Socket): void {
  socket.destroy();
}

export class H2EndpointPool implements StreamSlot {
  get sendTimeoutMs(): number {
    return this.options.sendTimeoutMs;
  }

  private readonly sessions: PooledSession[] = [];
  private readonly bySession = new Map<ClientHttp2Session, PooledSession>();
  private readonly queue: H2UpstreamExchange[] = [];
  private closed = false;

  constructor(
    readonly host: string,
    readonly port: number,
    /** `host:port`, the :authority when a request has no Host. */
    readonly authority: string,
    private readonly options: H2PoolOptions,
  ) {}

  /** Sessions that take new streams now (for tests and stats). */
  get size(): number {
    return this.sessions.length;
  }

  send(exchange: H2UpstreamExchange): void {
    const pooled = this.withRoom() ?? this.open();
    if (pooled === undefined) {
      this.queue.push(exchange);
      return;
    }
    this.begin(pooled, exchange);
  }

  private begin(pooled: PooledSession, exchange: H2UpstreamExchange): void {
    pooled.active++;
    if (pooled.idleTimer !== undefined) {
      clearTimeout(pooled.idleTimer);
      pooled.idleTimer = undefined;
    }
    exchange.start(pooled.session, this);
  }

  private withRoom(): PooledSession | undefined {
    for (const pooled of this.sessions) {
      if (pooled.active < pooled.capacity) return pooled;
    }
    return undefined;
  }

  private open(): PooledSession | undefined {
    if (this.closed || this.sessions.length >= this.options.limits.upstreamSessionsPerEndpoint)
      return undefined;
    const socket = connectTcp({ host: this.host, port: this.port, noDelay: true });
    socket.on('error', () => {});
    const session = connect(`http://${this.authority}`, {
      createConnection: () => socket,
      settings: {
        initialWindowSize: this.options.limits.initialWindowSize,
        enablePush: false,
      },
      maxSessionMemory: this.options.limits.maxSessionMemoryMb,
      maxHeaderListPairs: this.options.limits.maxHeaderListPairs,
    });
    const pooled: PooledSession = {
      session,
      socket,
      active: 0,
      capacity: this.options.limits.upstreamMaxConcurrentStreams,
      idleTimer: undefined,
      left: false,
    };
    this.sessions.push(pooled);
    this.bySession.set(session, pooled);
    const connectTimer = setTimeout(
      () => session.destroy(new Error('connect timeout')),
      this.options.connectTimeoutMs,
    );
    connectTimer.unref();
    session.once('connect', () => {
      clearTimeout(connectTimer);
      session.setLocalWindowSize(this.options.limits.sessionWindowSize);
    });
    // Its streams go on; new ones must not be opened on it (request() would throw).
    session.on('goaway', () => this.leave(pooled));
    session.on('error', () => {});
    session.on('close', () => {
      clearTimeout(connectTimer);
      this.leave(pooled);
      this.bySession.delete(session);
      if (pooled.idleTimer !== undefined) clearTimeout(pooled.idleTimer);
      this.startQueued();
    });
    // The peer's SETTINGS may allow more streams than the pool assumed while connecting.
    // Read once per SETTINGS frame: the remoteSettings getter builds its object anew on every call.
    session.on('remoteSettings', (settings) => {
      const peer = settings.maxConcurrentStreams ?? Number.POSITIVE_INFINITY;
      pooled.capacity = Math.min(peer, this.options.limits.upstreamMaxConcurrentStreams);
      this.startQueued();
    });
    return pooled;
  }

  /** A session stops taking streams: out of the pool (it closes once its streams are done). */
  private leave(pooled: PooledSession): void {
    const i = this.sessions.indexOf(pooled);
    if (i === -1) return;
    this.sessions.splice(i, 1);
    pooled.left = true;
    if (!pooled.session.closed && !pooled.session.destroyed) pooled.session.close();
    if (pooled.active === 0) setTimeout(cutSocket, LINGER_MS, pooled.socket).unref();
    // A slot was freed for another session: queued streams may open one.
    this.startQueued();
  }

  streamDone(session: ClientHttp2Session): void {
    const pooled = this.bySession.get(session);
    if (pooled === undefined) return;
    pooled.active--;
    if (pooled.left && pooled.active === 0) setTimeout(cutSocket, LINGER_MS, pooled.socket).unref();
    if (this.queue.length > 0) {
      this.startQueued();
      return;
    }
    if (pooled.active === 0 && this.sessions.includes(pooled)) {
      if (this.closed) this.leave(pooled);
      else {
        pooled.idleTimer = setTimeout(() => this.leave(pooled), this.options.idleTimeoutMs);
        pooled.idleTimer.unref();
      }
    }
  }

  private startQueued(): void {
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (next.done) {
        this.queue.shift();
        continue;
      }
      const pooled = this.withRoom() ?? this.open();
      if (pooled === undefined) return;
      this.queue.shift();
      this.begin(pooled, next);
    }
  }

  /** Graceful: sessions close once their streams are done. */
  close(): void {
    this.closed = true;
    for (const pooled of [...this.sessions]) if (pooled.active === 0) this.leave(pooled);
  }

  destroy(): void {
    this.closed = true;
    for (const [session, pooled] of this.bySession) {
      session.destroy();
      pooled.socket.destroy();
    }
  }
}

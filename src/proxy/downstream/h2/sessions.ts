// The HTTP/2 sessions of one listener: each with its stream-reset bound (rapid reset, MadeYouReset), its idle
// timeout (GOAWAY, then cut when idle again) and its connection window; GOAWAY to all on drain.
import { constants, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Http2Limits } from '../../options.js';
import { ResetGuard, SourceResets } from './reset-guard.js';
import { UpstreamShare } from './upstream-share.js';

const { NGHTTP2_ENHANCE_YOUR_CALM } = constants;

function ignore(): void {}

/**
 * Ends a session and its socket. Node's session.destroy() alone waits for a write in progress, which a stream the
 * client reset with NO_ERROR while its writes waited can hold forever; the socket's end frees it at once.
 */
function cutSession(session: Http2Session, socket: Socket): void {
  session.destroy();
  socket.destroy();
}

/** Per session: its reset bound, and whether it was told to go away already. */
export interface SessionState {
  guard: ResetGuard;
  goingAway: boolean;
  /** Over its reset bound, or its client over its own: being destroyed. */
  cut: boolean;
  /** The client's address, read when the session began (a torn-down session has no socket to ask). */
  source: string;
  /** The session's own socket (Node hands out a guarded stand-in that cannot be destroyed). */
  socket: Socket;
  /** What its streams may hold upstream at once. */
  upstream: UpstreamShare;
}

export class SessionTable {
  private readonly sessions = new Map<Http2Session, SessionState>();
  /** Streams the proxy reset itself: their close is not held against the client. */
  private readonly resetByProxy = new WeakSet<ServerHttp2Stream>();
  private readonly sources: SourceResets;

  constructor(
    private readonly limits: Http2Limits,
    /** Logs why a session was cut: once per session. */
    private readonly warn: (message: string) => void,
  ) {
    this.sources = new SourceResets(limits.maxStreamResetsPerSource, limits.streamResetWindowMs);
  }

  /** The client at `source` went over its reset budget in a window that has not ended: no new session. */
  refuses(source: string | undefined): boolean {
    return source !== undefined && this.sources.refuses(source, performance.now());
  }

  /** A session's state, made when it begins. */
  track(session: Http2Session, socket: Socket): SessionState {
    const limits = this.limits;
    const state: SessionState = {
      guard: new ResetGuard(limits.maxStreamResetsPerWindow, limits.streamResetWindowMs),
      goingAway: false,
      cut: false,
      source: socket.remoteAddress ?? '',
      socket,
      upstream: new UpstreamShare(limits.maxUpstreamPerSession, () => session.destroyed || socket.destroyed),
    };
    this.sessions.set(session, state);
    session.on('error', ignore);
    // The client's SETTINGS (the end of its preface) must come within the deadline.
    const preface = setTimeout(cutSession, limits.prefaceTimeoutMs, session, socket);
    session.once('remoteSettings', () => clearTimeout(preface));
    session.on('close', () => {
      clearTimeout(preface);
      this.sessions.delete(session);
    });
    // Idle: GOAWAY; idle again (a stream that never ends, e.g. a client that stopped reading): cut.
    session.setTimeout(limits.idleTimeoutMs, () => {
      if (state.goingAway) cutSession(session, socket);
      else this.goAway(session, state);
    });
    try {
      session.setLocalWindowSize(limits.sessionWindowSize);
    } catch {
      // A session already gone has no window to set.
    }
    return state;
  }

  /** GOAWAY: streams in flight finish, new ones go elsewhere. */
  goAway(session: Http2Session, state: SessionState): void {
    state.goingAway = true;
    if (!session.closed) session.close();
  }

  /** The proxy resets this stream on purpose. */
  markResetByProxy(stream: ServerHttp2Stream): void {
    this.resetByProxy.add(stream);
  }

  /**
   * The client reset `stream`, or made the proxy reset it: it counts toward its session's bound and its client's
   * budget. Streams closed by the session's end are not resets.
   */
  countReset(stream: ServerHttp2Stream, session: Http2Session, state: SessionState): void {
    if (state.cut || session.destroyed || this.resetByProxy.has(stream)) return;
    const now = performance.now();
    const sessionOver = state.guard.add(now);
    const sourceOver = state.source !== '' && this.sources.add(state.source, now);
    if (!sessionOver && !sourceOver) return;
    state.cut = true;
    this.warn(
      sessionOver
        ? 'too many stream resets on one HTTP/2 connection, closing it'
        : `too many stream resets from ${state.source} across its HTTP/2 connections: closing them, and refusing new ones for up to ${this.limits.streamResetWindowMs} ms`,
    );
    session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
    // After the GOAWAY is flushed (destroying at once can drop it); no new stream is taken meanwhile.
    setImmediate(cutSession, session, state.socket);
  }

  goAwayAll(): void {
    for (const [session, state] of this.sessions) this.goAway(session, state);
  }

  destroyAll(): void {
    for (const [session, state] of this.sessions) cutSession(session, state.socket);
    this.sessions.clear();
  }
}

// The HTTP/2 sessions of one listener: each with its stream-reset bound (rapid reset, MadeYouReset), its idle
// timeout (GOAWAY, then cut when idle again) and its connection window; GOAWAY to all on drain.
import { constants, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { performance } from 'node:perf_hooks';
import type { Http2Limits } from '../options.js';
import { ResetGuard } from './reset-guard.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_ENHANCE_YOUR_CALM } = constants;

function ignore(): void {}

function destroySession(session: Http2Session): void {
  session.destroy();
}

/** Per session: its reset bound, and whether it was told to go away already. */
export interface SessionState {
  guard: ResetGuard;
  goingAway: boolean;
  /** Over its reset bound: being destroyed. */
  cut: boolean;
}

export class SessionTable {
  private readonly sessions = new Map<Http2Session, SessionState>();
  /** Streams the proxy reset itself: their close is not held against the client. */
  private readonly resetByProxy = new WeakSet<ServerHttp2Stream>();

  constructor(
    private readonly limits: Http2Limits,
    /** Logs, once per session, that it went over its reset bound. */
    private readonly onTooManyResets: () => void,
  ) {}

  /** A session's state, made on first sight: streams that came with the preface are emitted before 'session'. */
  track(session: Http2Session): SessionState {
    const known = this.sessions.get(session);
    if (known !== undefined) return known;
    const limits = this.limits;
    const state: SessionState = {
      guard: new ResetGuard(limits.maxStreamResetsPerWindow, limits.streamResetWindowMs),
      goingAway: false,
      cut: false,
    };
    this.sessions.set(session, state);
    session.on('error', ignore);
    session.on('close', () => this.sessions.delete(session));
    // Idle: GOAWAY; idle again (a stream that never ends, e.g. a client that stopped reading): cut.
    session.setTimeout(limits.idleTimeoutMs, () => {
      if (state.goingAway) session.destroy();
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

  /** A stream closed: a reset the client caused counts toward its session's bound. */
  streamClosed(stream: ServerHttp2Stream, session: Http2Session, state: SessionState): void {
    const code = stream.rstCode ?? NGHTTP2_NO_ERROR;
    if (code === NGHTTP2_NO_ERROR || state.cut || this.resetByProxy.has(stream)) return;
    if (!state.guard.add(performance.now())) return;
    state.cut = true;
    this.onTooManyResets();
    session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
    // After the GOAWAY is flushed (destroying at once can drop it); no new stream is taken meanwhile.
    setImmediate(destroySession, session);
  }

  goAwayAll(): void {
    for (const [session, state] of this.sessions) this.goAway(session, state);
  }

  destroyAll(): void {
    for (const session of this.sessions.keys()) session.destroy();
    this.sessions.clear();
  }
}

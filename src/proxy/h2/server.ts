// The HTTP/2 side of one listener: a node:http2 server that never listens itself; the listener hands it the
// sockets that chose h2 (ALPN on TLS, the connection preface on cleartext). Each stream becomes a ClientRequest
// and an H2Response for the same handler as HTTP/1.1. Every limit is set explicitly (options.ts), stream resets
// are bounded per session, and drain is GOAWAY with a grace for the streams in flight.
import {
  constants,
  createServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { TLSSocket } from 'node:tls';
import { handleRequest } from '../handler.js';
import type { Http2Limits } from '../options.js';
import { hostWithoutPort } from '../routing.js';
import type { ListenerContext, ProxyRuntime } from '../runtime.js';
import { type CertificateTable, listenerHostnameOf } from '../tls.js';
import { isGrpcContentType } from './grpc-status.js';
import { requestFromStream } from './request.js';
import { ResetGuard } from './reset-guard.js';
import { H2Response, type StreamOwner } from './response.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_PROTOCOL_ERROR, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_FLAG_END_STREAM } =
  constants;

export interface H2Listener {
  /** Serves HTTP/2 on a socket whose first bytes (if any were read) were put back. */
  accept(socket: Socket): void;
  /** GOAWAY to every session: streams in flight finish, new ones go elsewhere. */
  closeSessions(): void;
  /** Cuts every session. */
  destroySessions(): void;
}

/** Node's server options from our limits: nothing left to Node's defaults (unlimited streams among them). */
function serverOptions(limits: Http2Limits): Parameters<typeof createServer>[0] {
  return {
    settings: {
      maxConcurrentStreams: limits.maxConcurrentStreams,
      maxHeaderListSize: limits.maxHeaderListSize,
      initialWindowSize: limits.initialWindowSize,
      enableConnectProtocol: false,
    },
    maxHeaderListPairs: limits.maxHeaderListPairs,
    maxSessionMemory: limits.maxSessionMemoryMb,
    maxSessionInvalidFrames: limits.maxSessionInvalidFrames,
    maxSessionRejectedStreams: limits.maxSessionRejectedStreams,
    maxSettings: limits.maxSettings,
    maxOutstandingPings: limits.maxOutstandingPings,
    peerMaxConcurrentStreams: limits.maxConcurrentStreams,
  };
}

function ignore(): void {}

function destroySession(session: Http2Session): void {
  session.destroy();
}

/** Streams the proxy reset itself: their close is not held against the client. */
const resetByProxy = new WeakSet<ServerHttp2Stream>();
const owner: StreamOwner = { resetByProxy: (stream) => resetByProxy.add(stream) };

/** Per session: its reset bound, and whether it was told to go away already. */
interface SessionState {
  guard: ResetGuard;
  goingAway: boolean;
  /** Over its reset bound: being destroyed. */
  cut: boolean;
}

export function createH2Listener(
  rt: ProxyRuntime,
  context: ListenerContext,
  certificates: () => CertificateTable | undefined,
): H2Listener {
  const limits = rt.options.http2;
  const server: Http2Server = createServer(serverOptions(limits));
  const sessions = new Map<Http2Session, SessionState>();

  /** A session's state, made on first sight: streams that came with the preface are emitted before 'session'. */
  function track(session: Http2Session): SessionState {
    const known = sessions.get(session);
    if (known !== undefined) return known;
    const state: SessionState = {
      guard: new ResetGuard(limits.maxStreamResetsPerWindow, limits.streamResetWindowMs),
      goingAway: false,
      cut: false,
    };
    sessions.set(session, state);
    session.on('error', ignore);
    session.on('close', () => sessions.delete(session));
    // Idle: GOAWAY; idle again (a stream that never ends, e.g. a client that stopped reading): cut.
    session.setTimeout(limits.idleTimeoutMs, () => {
      if (state.goingAway) session.destroy();
      else {
        state.goingAway = true;
        session.close();
      }
    });
    try {
      session.setLocalWindowSize(limits.sessionWindowSize);
    } catch {
      // A session already gone has no window to set.
    }
    return state;
  }

  server.on('session', track);

  server.on(
    'stream',
    (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, raw: string[]) => {
      // First: a stream error nobody hears would end the process.
      stream.on('error', ignore);
      const session = stream.session;
      if (session === undefined) return;
      const state = track(session);
      stream.on('close', () => onStreamClose(stream, session, state));
      serveStream(stream, headers, raw, (flags & NGHTTP2_FLAG_END_STREAM) !== 0, session);
      // Draining: this stream is answered, the client opens the next ones elsewhere (HTTP/1.1's `connection: close`).
      if ((rt.draining || context.closing) && !state.goingAway) {
        state.goingAway = true;
        session.close();
      }
    },
  );

  function onStreamClose(stream: ServerHttp2Stream, session: Http2Session, state: SessionState): void {
    const code = stream.rstCode ?? NGHTTP2_NO_ERROR;
    if (code === NGHTTP2_NO_ERROR || resetByProxy.has(stream) || state.cut) return;
    if (!state.guard.add(performance.now())) return;
    state.cut = true;
    rt.options.log(`listener ${context.name}: too many stream resets on one HTTP/2 connection, closing it`);
    session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
    // After the GOAWAY is flushed (destroying at once can drop it); no new stream is taken meanwhile.
    setImmediate(destroySession, session);
  }

  function serveStream(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    raw: string[],
    ended: boolean,
    session: Http2Session,
  ): void {
    const socket = session.socket as Socket;
    const request = requestFromStream(stream, raw, ended, socket, limits.maxHeaderListSize);
    if (!('method' in request)) {
      if (request.status === 0) stream.close(NGHTTP2_PROTOCOL_ERROR);
      else
        stream.respond(
          { ':status': request.status, server: 'portico', 'content-length': '0' },
          { endStream: true },
        );
      return;
    }
    const table = certificates();
    if (table !== undefined && misdirected(table, socket as TLSSocket, headers)) {
      stream.respond({ ':status': 421, server: 'portico', 'content-length': '0' }, { endStream: true });
      return;
    }
    const grpc = isGrpcContentType(headers['content-type']);
    const response = new H2Response(stream, owner, grpc, request.method === 'HEAD');
    stream.on('close', () => response.close());
    if (request.body !== null) watchBodyStall(stream, response, rt.options.limits.requestBodyIdleTimeoutMs);
    handleRequest(rt, context, request, response);
  }

  return {
    accept(socket) {
      server.emit('connection', socket);
    },
    closeSessions() {
      for (const [session, state] of sessions) {
        state.goingAway = true;
        if (!session.closed) session.close();
      }
    },
    destroySessions() {
      for (const session of sessions.keys()) session.destroy();
      sessions.clear();
    },
  };
}

/**
 * A request body that delivers nothing for `ms` while the proxy reads it is answered 408 (as over HTTP/1.1); a
 * body paused by backpressure waits on the upstream, not the client, so it does not count.
 */
function watchBodyStall(stream: ServerHttp2Stream, response: H2Response, ms: number): void {
  const onTimeout = (): void => {
    if (stream.readableEnded || stream.destroyed) return;
    if (stream.isPaused()) stream.setTimeout(ms, onTimeout);
    else response.abort(408);
  };
  stream.setTimeout(ms, onTimeout);
  stream.once('end', () => stream.setTimeout(0));
}

/**
 * The request's authority is one the connection's certificate (chosen by SNI) was not chosen for: a client
 * reusing a connection for another host must ask again on its own (421, RFC 9110 §15.5.20).
 */
function misdirected(table: CertificateTable, socket: TLSSocket, headers: IncomingHttpHeaders): boolean {
  const authority = headers[':authority'] ?? headers.host;
  if (authority === undefined) return false;
  // No SNI: the client took the default certificate for whatever it asks; nothing to compare.
  if (typeof socket.servername !== 'string' || socket.servername === '') return false;
  const sni = socket.servername;
  const host = hostWithoutPort(authority);
  return listenerHostnameOf(table, host) !== listenerHostnameOf(table, sni);
}

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
import type { TLSSocket } from 'node:tls';
import { clientFacts, type ExchangeHandler, type ListenerContext } from '../../exchange.js';
import type { Http2Limits, ProxyOptions } from '../../options.js';
import { hostWithoutPort } from '../../routing/route-table.js';
import { isGrpcContentType } from '../../wire/grpc-status.js';
import { type CertificateTable, listenerHostnameOf } from '../tls.js';
import { requestFromStream } from './request.js';
import { H2Response, type StreamOwner } from './response.js';
import { type SessionState, SessionTable } from './sessions.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_PROTOCOL_ERROR, NGHTTP2_FLAG_END_STREAM } = constants;

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

/** Closing the socket closes its session's streams (CANCEL), and each stream's close cancels its upstream. */
function destroySocket(this: Socket): void {
  this.destroy();
}

/** What the HTTP/2 side reads of the proxy it serves (the runtime, given from above): its knobs, and whether it drains. */
export interface H2Runtime {
  readonly options: ProxyOptions;
  readonly draining: boolean;
}

/** What serving a stream needs besides the stream. */
interface StreamContext {
  rt: H2Runtime;
  handle: ExchangeHandler;
  context: ListenerContext;
  certificates: () => CertificateTable | undefined;
  sessions: SessionTable;
  owner: StreamOwner;
  limits: Http2Limits;
}

export function createH2Listener(
  rt: H2Runtime,
  context: ListenerContext,
  certificates: () => CertificateTable | undefined,
  handle: ExchangeHandler,
  /** The listener's own (its header limits), else the proxy's. */
  limits: Http2Limits = rt.options.http2,
): H2Listener {
  const server: Http2Server = createServer(serverOptions(limits));
  const sessions = new SessionTable(limits, (message) =>
    rt.options.log.warn(`listener ${context.name}: ${message}`),
  );
  const owner: StreamOwner = { resetByProxy: (stream) => sessions.markResetByProxy(stream) };
  const ctx: StreamContext = { rt, handle, context, certificates, sessions, owner, limits };
  /** The socket being handed to Node: it emits 'session' for it before emit('connection') returns. */
  let arriving: Socket | undefined;
  // Streams are taken from their session's event: Node emits them a tick after their HEADERS, and a stream reset
  // in the same read is destroyed by then and no longer knows its session (the server's event would lose it).
  server.on('session', (session: Http2Session) => {
    if (arriving === undefined) {
      // Not how Node hands sessions out today; were it to change, refuse rather than keep what cannot be cut.
      rt.options.log.error(`listener ${context.name}: an HTTP/2 session came without its socket; closing it`);
      session.destroy();
      return;
    }
    const state = sessions.track(session, arriving);
    session.on(
      'stream',
      (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, raw: string[]) =>
        onStream(ctx, session, state, stream, headers, (flags & NGHTTP2_FLAG_END_STREAM) !== 0, raw),
    );
  });
  return {
    accept: (socket) => {
      // A client's FIN ends its session: it can send no WINDOW_UPDATE, so data queued for it would wait forever.
      // Cleartext sockets allow half-open (HTTP/1.1 answers a half-closed client), which Node's HTTP/2 never ends.
      socket.once('end', destroySocket);
      if (sessions.refuses(socket.remoteAddress)) {
        socket.destroy();
        return;
      }
      arriving = socket;
      try {
        server.emit('connection', socket);
      } finally {
        arriving = undefined;
      }
    },
    closeSessions: () => sessions.goAwayAll(),
    destroySessions: () => sessions.destroyAll(),
  };
}

/** The client reset the stream, or made the proxy reset it: before its response ended, or with an error code. */
function wasReset(stream: ServerHttp2Stream): boolean {
  return stream.aborted || (stream.rstCode ?? NGHTTP2_NO_ERROR) !== NGHTTP2_NO_ERROR;
}

/** A stream as its session emits it: its resets counted, then served unless it is gone already. */
function onStream(
  ctx: StreamContext,
  session: Http2Session,
  state: SessionState,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  ended: boolean,
  raw: string[],
): void {
  const { rt, context, sessions } = ctx;
  // First: a stream error nobody hears would end the process.
  stream.on('error', ignore);
  // Reset already (the rapid-reset pattern): its events came before this one. It counts toward the bounds all the
  // same, and nothing is started upstream for it.
  if (stream.destroyed) {
    if (wasReset(stream)) sessions.countReset(stream, session, state);
    return;
  }
  // 'aborted': reset before its response ended (any code); else a close with an error code.
  stream.on('aborted', () => sessions.countReset(stream, session, state));
  stream.on('close', () => {
    if (!stream.aborted && wasReset(stream)) sessions.countReset(stream, session, state);
  });
  if (stream.closed) return;
  serveStream(ctx, stream, headers, raw, ended, session, state);
  // Draining: this stream is answered, the client opens the next ones elsewhere (HTTP/1.1's `connection: close`).
  if ((rt.draining || context.closing) && !state.goingAway) sessions.goAway(session, state);
}

/** One stream: refused, misdirected (421), or a request for the handler with an H2Response. */
function serveStream(
  ctx: StreamContext,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  raw: string[],
  ended: boolean,
  session: Http2Session,
  state: SessionState,
): void {
  const { rt } = ctx;
  const socket = session.socket as Socket;
  const request = requestFromStream(stream, raw, ended, clientFacts(socket), ctx.limits.maxHeaderListSize);
  if ('method' in request) request.upstreamShare = state.upstream;
  if (!('method' in request)) {
    if (request.status === 0) stream.close(NGHTTP2_PROTOCOL_ERROR);
    else answerLocally(stream, request.status);
    return;
  }
  const table = ctx.certificates();
  if (table !== undefined && misdirected(table, socket as TLSSocket, headers)) {
    answerLocally(stream, 421);
    return;
  }
  const grpc = isGrpcContentType(headers['content-type']);
  const response = new H2Response(
    stream,
    ctx.owner,
    grpc,
    request.method === 'HEAD',
    // requestFromStream refused every `te` but `trailers` (in any case), so any `te` left asks for trailers.
    headers.te !== undefined,
  );
  stream.on('close', () => response.close());
  // The client reset the stream before its response ended. With NO_ERROR Node keeps the stream (no 'close') while
  // writes wait for a window that will never open: the response ends here, which cancels its upstream.
  stream.on('aborted', () => response.close());
  if (request.body !== null) watchBodyStall(stream, response, rt.options.limits.requestBodyIdleTimeoutMs);
  ctx.handle(ctx.context, request, response);
}

/** An empty answer before the handler saw the request. */
function answerLocally(stream: ServerHttp2Stream, status: number): void {
  stream.respond({ ':status': status, server: 'portico', 'content-length': '0' }, { endStream: true });
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

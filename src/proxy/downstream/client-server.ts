// The proxy's own HTTP/1.1 server: a net (or tls) server whose connections are ClientConnections, with one
// coarse timer per server enforcing the head, request and keep-alive timeouts of all its connections.
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import {
  createServer as createTlsServer,
  type SecureContextOptions,
  type TLSSocket,
  type TlsOptions,
} from 'node:tls';
import type { ClientRequest } from '../exchange.js';
import type { ProxyLimits } from '../options.js';
import { ClientConnection, type ConnectionHost } from './client-connection.js';
import type { ClientResponse } from './client-response.js';
import { carrying, type ProxyHeaderOptions, readProxyHeader, unshifted } from './proxy-header.js';

/** The listener's limits (documented on ProxyLimits) and what to do with its traffic. */
export interface ClientServerOptions extends ProxyLimits {
  /** TLS: certificate, key, SNI callback; absent: plain HTTP. */
  tls?: TlsOptions;
  onRequest(request: ClientRequest, response: ClientResponse): void;
  onUpgrade(request: ClientRequest, socket: Socket, head: Buffer): void;
  onConnection(socket: Socket): void;
  /** A connection was closed at accept: maxConnections were open. */
  onRefused?(): void;
  /** Where connections that chose HTTP/2 (ALPN `h2`, or the h2c preface) go; absent: HTTP/1.1 only. */
  http2?: Http2Handoff;
  /** Connections open with a PROXY protocol header (proxy-header.ts); absent: none is taken. */
  proxyProtocol?: ProxyHeaderOptions;
}

/** The HTTP/2 server a listener hands sockets to, and its share of close. */
export interface Http2Handoff {
  accept(socket: Socket): void;
  closeSessions(): void;
  destroySessions(): void;
}

export interface ClientServer {
  readonly server: NetServer;
  /** Stops accepting; `done` runs once every connection has closed. */
  close(done?: () => void): void;
  /** Closes connections between requests; the others close once their response is written. */
  closeIdleConnections(): void;
  /** Cuts every connection (not upgraded ones: those are tunnels, tracked elsewhere). */
  closeAllConnections(): void;
  /** TLS only: the certificate for clients without a matching SNI name. */
  setSecureContext(options: SecureContextOptions): void;
  /** TLS only: whether connections accepted from now on ask for a client certificate, and require a valid one. */
  requestClientCertificates(request: { requestCert: boolean; rejectUnauthorized: boolean }): void;
}

/**
 * The server that listens: `server` itself, or (PROXY protocol) a TCP server in front that reads each
 * connection's header and hands the socket to `server` (which then does its TLS, if any, and HTTP).
 */
function proxyHeaderFront(
  server: NetServer,
  options: ProxyHeaderOptions | undefined,
  tls: boolean,
): NetServer {
  if (options === undefined) return server;
  const handOn = tls ? carrying : unshifted;
  return createNetServer({ allowHalfOpen: true, noDelay: true }, (socket) =>
    readProxyHeader(socket, options, (ready, rest) => server.emit('connection', handOn(ready, rest))),
  );
}

export function createClientServer(options: ClientServerOptions): ClientServer {
  const http2 = options.http2;
  const connections = new Set<ClientConnection>();
  const host: ConnectionHost & { clock: number; closing: boolean } = {
    limits: { maxHeaderSize: options.maxHeaderSize, maxHeadersCount: options.maxHeadersCount },
    clock: performance.now(),
    closing: false,
    onRequest: options.onRequest,
    onUpgrade: options.onUpgrade,
    // TLS chooses by ALPN before any byte is read; only cleartext connections look for the preface.
    onPreface: options.tls === undefined ? options.http2?.accept : undefined,
    forget: (connection) => connections.delete(connection),
  };
  const accept = (socket: Socket): void => {
    socket.setNoDelay(true);
    options.onConnection(socket);
    if (host.closing) {
      socket.destroy();
      return;
    }
    if (http2 !== undefined && (socket as TLSSocket).alpnProtocol === 'h2') {
      http2.accept(socket);
      return;
    }
    connections.add(new ClientConnection(socket, host));
  };
  const server: NetServer =
    options.tls === undefined
      ? createNetServer({ allowHalfOpen: true, noDelay: true }, accept)
      : // No half-open TLS: a client gone during the handshake would linger until the handshake timeout.
        createTlsServer(
          {
            ...options.tls,
            ALPNProtocols: http2 === undefined ? ['http/1.1'] : ['h2', 'http/1.1'],
            handshakeTimeout: options.tlsHandshakeTimeoutMs,
          },
          accept,
        );
  if (options.tls !== undefined) server.on('tlsClientError', (_error, socket: Socket) => socket.destroy());
  const listening = proxyHeaderFront(server, options.proxyProtocol, options.tls !== undefined);
  if (options.maxConnections > 0) {
    listening.maxConnections = options.maxConnections;
    listening.on('drop', () => options.onRefused?.());
  }

  // One timer for all connections: each compares its phase start with this clock (resolution: the interval).
  const shortest = Math.min(
    options.headersTimeoutMs,
    options.requestTimeoutMs,
    options.keepAliveTimeoutMs,
    options.requestBodyIdleTimeoutMs,
  );
  const interval = Math.max(10, Math.min(1000, Math.floor(shortest / 4)));
  const sweeper = setInterval(() => {
    host.clock = performance.now();
    for (const c of connections) c.sweep(options);
  }, interval);
  sweeper.unref();

  return {
    server: listening,
    close(done) {
      host.closing = true;
      // The sweep goes on until the last connection is gone: it still ends slow heads and lingering sockets.
      listening.close(() => {
        clearInterval(sweeper);
        done?.();
      });
    },
    closeIdleConnections() {
      host.closing = true;
      for (const c of connections) c.close();
      http2?.closeSessions();
    },
    closeAllConnections() {
      for (const c of connections) c.socket.destroy();
      connections.clear();
      http2?.destroySessions();
    },
    setSecureContext(context) {
      (server as ReturnType<typeof createTlsServer>).setSecureContext(context);
    },
    requestClientCertificates(request) {
      // Node's TLS server reads both for each connection it accepts (setSecureContext does not change them).
      Object.assign(server, request);
    },
  };
}

// The discovery port's TLS listener, in front of gRPC: TLS 1.3 only, a handshake must finish within a deadline,
// and a connection must carry an authorized stream soon after, or it is closed. Connections not yet authorized
// (handshaking, or secured but without an accepted hello) are capped per source address and in all, so a flood
// of idle or slow connections from a few pods can neither exhaust the controller nor lock out restarting proxies;
// an authorized proxy's connection no longer counts. Each connection has its own budget of token reviews.
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { type TLSSocket, Server as TlsServer } from 'node:tls';
import { PorticoError } from '../platform/errors.js';
import { formatHostPort, parseHostPort } from '../platform/host-port.js';
import type { Logger } from '../platform/log-line.js';
import { createTokenBucket, type RateLimit, type TokenBucket } from '../platform/token-bucket.js';
import { type ConnectionCaps, createConnectionCaps } from './connection-caps.js';

export interface TlsFrontOptions {
  /** `host:port`; port 0 lets the OS choose. */
  address: string;
  tls: { caPem: string; certPem: string; keyPem: string };
  /** Mutual TLS: the handshake refuses peers without a certificate from the CA. */
  requireClientCertificate: boolean;
  handshakeTimeoutMs: number;
  /** From accept to an authorized stream (`authorized()`), at most. */
  authorizeWithinMs: number;
  maxUnauthorizedConnections: number;
  /** Of those, from one source address at most (loopback excepted unless `capLoopbackSources`). */
  maxUnauthorizedPerAddress: number;
  capLoopbackSources: boolean;
  /** Credential checks the server may not answer from its cache, per connection. */
  reviewRate: RateLimit;
  /** Each connection once its TLS handshake is done: hand it to the HTTP/2 (gRPC) server. */
  onSecureConnection: (socket: TLSSocket) => void;
  log: Logger;
}

export interface TlsFront {
  listen(): Promise<number>;
  /** The peer (`address:port`, as gRPC names it) has an authorized stream: it no longer counts, nor expires. */
  authorized(peer: string): void;
  /** Connections not authorized yet. */
  unauthorized(): number;
  /** Takes one credential check from the peer's connection's budget; false when it is spent (or unknown). */
  allowReview(peer: string): boolean;
  close(): void;
}

interface Connection {
  socket: Socket;
  timer: NodeJS.Timeout;
  authorized: boolean;
  /** Its TLS handshake is done. */
  secured: boolean;
  /** Closed to make room: it no longer counts. */
  evicted: boolean;
  address: string;
  reviews: TokenBucket;
}

/**
 * Makes room for a new connection when the global bound is reached: the oldest one still in its TLS handshake
 * goes. A flood of connections that never handshake (loopback is uncapped per address in standalone, where
 * every proxy connects from 127.0.0.1) then churns through its own, and a proxy's connection, whose handshake
 * takes milliseconds, gets in; false when every pending connection is past its handshake.
 */
function evictOldestHandshaking(connections: Map<string, Connection>, caps: ConnectionCaps): boolean {
  for (const connection of connections.values()) {
    if (connection.authorized || connection.secured || connection.evicted) continue;
    connection.evicted = true;
    clearTimeout(connection.timer);
    caps.release(connection.address);
    connection.socket.destroy();
    return true;
  }
  return false;
}

const MIN_VERSION = 'TLSv1.3';

export function createTlsFront(options: TlsFrontOptions): TlsFront {
  const connections = new Map<string, Connection>();
  const caps = createConnectionCaps(options);
  const tls = secureServer(options, connections);

  // Plain TCP first: the count and the deadline start at accept, before any TLS work is done for the peer.
  const tcp = createServer((socket) => {
    const address = sourceAddress(socket);
    const admitted =
      caps.admit(address) ||
      (caps.full() &&
        caps.addressHasRoom(address) &&
        evictOldestHandshaking(connections, caps) &&
        caps.admit(address));
    if (!admitted) {
      socket.destroy();
      return;
    }
    const key = peerOf(socket);
    const connection: Connection = {
      socket,
      authorized: false,
      secured: false,
      evicted: false,
      address,
      reviews: createTokenBucket(options.reviewRate),
      timer: setTimeout(() => {
        options.log.info(
          `discovery: closing ${key}: no authorized stream within ${options.authorizeWithinMs} ms`,
        );
        socket.destroy();
      }, options.authorizeWithinMs),
    };
    connections.set(key, connection);
    socket.once('close', () => {
      clearTimeout(connection.timer);
      if (!connection.authorized && !connection.evicted) caps.release(connection.address);
      if (connections.get(key) === connection) connections.delete(key);
    });
    socket.on('error', () => {});
    tls.emit('connection', socket);
  });

  return {
    listen: () => listenOn(tcp, options.address),
    authorized(peer) {
      const connection = connections.get(peer);
      if (connection === undefined || connection.authorized || connection.evicted) return;
      connection.authorized = true;
      clearTimeout(connection.timer);
      caps.release(connection.address);
    },
    unauthorized: () => caps.pending(),
    allowReview(peer) {
      return connections.get(peer)?.reviews.take() === true;
    },
    close() {
      tcp.close();
      for (const { socket } of connections.values()) socket.destroy();
    },
  };
}

/** TLS 1.3 with ALPN h2 and the handshake deadline; a secured socket of a counted connection goes to gRPC. */
function secureServer(options: TlsFrontOptions, connections: Map<string, Connection>): TlsServer {
  const tls = new TlsServer({
    ca: options.tls.caPem,
    cert: options.tls.certPem,
    key: options.tls.keyPem,
    requestCert: options.requireClientCertificate,
    rejectUnauthorized: options.requireClientCertificate,
    minVersion: MIN_VERSION,
    ALPNProtocols: ['h2'],
    handshakeTimeout: options.handshakeTimeoutMs,
  });
  tls.on('secureConnection', (socket: TLSSocket) => {
    const connection = connections.get(peerOf(socket));
    if (connection === undefined || connection.evicted) {
      socket.destroy();
      return;
    }
    connection.secured = true;
    options.onSecureConnection(socket);
  });
  // A failed handshake (no certificate, another CA, TLS 1.2, the deadline) ends its connection.
  tls.on('tlsClientError', (_error, socket) => socket.destroy());
  return tls;
}

async function listenOn(tcp: NetServer, address: string): Promise<number> {
  const { host, port } = parseHostPort(address, 'discovery address');
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', (error) =>
      reject(
        new PorticoError(
          'E_DISCOVERY',
          `discovery server: cannot listen on ${formatHostPort({ host, port })}: ${error.message}`,
          { cause: error },
        ),
      ),
    );
    tcp.listen(port, host, () => resolve());
  });
  const bound = tcp.address();
  return typeof bound === 'object' && bound !== null ? bound.port : port;
}

/** The peer's address, an IPv4-mapped IPv6 one as plain IPv4 (one source, one count). */
function sourceAddress(socket: Socket): string {
  const address = socket.remoteAddress ?? '';
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}

/** `address:port` as gRPC's `getPeer()` writes it (IPv6 without brackets). */
function peerOf(socket: Socket): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

// One bound socket per Listener: an HTTP or HTTPS server with the hardening limits, connection accounting,
// malformed-input handling, and graceful removal.
import { createServer as createHttpServer, type Server, STATUS_CODES } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Listener } from '../ir/fleet-config.js';
import { handleRequest } from './handler.js';
import type { ListenerContext, ProxyRuntime } from './runtime.js';
import { type CertificateTable, selectCertificate } from './tls.js';
import { handleUpgrade } from './upgrade.js';

export interface BoundListener {
  context: ListenerContext;
  protocol: Listener['protocol'];
  server: Server;
  address: string;
  port: number;
  /** HTTPS only: replaced on each apply; the SNI callback reads the current one. */
  certificates?: CertificateTable;
  /** HTTPS only: the certificate of the default context, to notice a change. */
  defaultCertificate?: string;
}

/** Parse errors, oversize heads and slow clients: answer once, close, never crash. */
function onClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  const inProgress = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inProgress?.headersSent === true) {
    socket.destroy();
    return;
  }
  const status =
    error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nserver: portico\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`,
  );
}

function createListenerServer(rt: ProxyRuntime, bound: Omit<BoundListener, 'server'>): Server {
  const { limits } = rt.options;
  const base = {
    maxHeaderSize: limits.maxHeaderSize,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often headersTimeout/requestTimeout are enforced; Node's default (30 s) is too coarse.
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
  const server: Server =
    bound.protocol === 'HTTPS'
      ? createHttpsServer({
          ...base,
          cert: bound.certificates?.fallbackSecret.certificatePem,
          key: bound.certificates?.fallbackSecret.privateKeyPem,
          SNICallback: (name, done) => {
            const table = bound.certificates;
            if (table === undefined) done(new Error('no certificates'));
            else done(null, selectCertificate(table, name));
          },
        })
      : createHttpServer(base);
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxHeadersCount = limits.maxHeadersCount + 1;
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
  server.on('request', (req, res) => handleRequest(rt, bound.context, req, res));
  server.on('upgrade', (req, socket, head) => handleUpgrade(rt, bound.context, req, socket, head));
  server.on('clientError', onClientError);
  server.on('connection', (socket: Socket) => {
    rt.metrics.connectionOpened(bound.context.name);
    socket.on('close', () => rt.metrics.connectionClosed(bound.context.name));
  });
  if (bound.protocol === 'HTTPS') server.on('tlsClientError', (_error, socket: Socket) => socket.destroy());
  return server;
}

export async function bindListener(
  rt: ProxyRuntime,
  listener: Listener,
  port: number,
  certificates: CertificateTable | undefined,
): Promise<BoundListener> {
  const bound = {
    context: { name: listener.name, proto: listener.protocol === 'HTTPS' ? 'https' : 'http', closing: false },
    protocol: listener.protocol,
    address: rt.options.bindAddress,
    port,
    certificates,
    defaultCertificate: certificates?.fallbackSecret.certificatePem,
  } satisfies Omit<BoundListener, 'server'> as BoundListener;
  const server = createListenerServer(rt, bound);
  bound.server = server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: rt.options.bindAddress, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => rt.options.log(`listener ${listener.name}: ${error.message}`));
  const address = server.address() as AddressInfo;
  bound.port = address.port;
  bound.address = address.address;
  return bound;
}

/** Installs new certificates; the default context is rebuilt only when its certificate changed. */
export function updateCertificates(bound: BoundListener, certificates: CertificateTable): void {
  bound.certificates = certificates;
  const secret = certificates.fallbackSecret;
  if (bound.defaultCertificate !== secret.certificatePem) {
    (bound.server as HttpsServer).setSecureContext({
      cert: secret.certificatePem,
      key: secret.privateKeyPem,
    });
    bound.defaultCertificate = secret.certificatePem;
  }
}

/**
 * Stops accepting, closes idle keep-alive connections, lets requests in flight finish (their responses
 * carry `connection: close`), and cuts what is left after `maxMs`.
 */
export function closeListener(bound: BoundListener, maxMs: number): Promise<void> {
  bound.context.closing = true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => bound.server.closeAllConnections(), maxMs);
    bound.server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    bound.server.closeIdleConnections();
  });
}

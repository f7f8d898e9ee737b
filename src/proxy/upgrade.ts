// WebSocket (and any HTTP/1.1 Upgrade) pass-through: route like a request, then splice the two sockets.
import { request as httpRequest, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ClientRequest } from './client-request.js';
import { responseHeaders } from './headers.js';
import { resolveRequest, upstreamHeaders } from './resolve.js';
import type { ListenerContext, ProxyRuntime } from './runtime.js';

/** How long an upgrade socket the proxy ended is kept for the client to read the answer. */
const LINGER_MS = 1000;

function rawResponse(status: number, rawHeaders: string[]): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
  for (let i = 0; i < rawHeaders.length; i += 2) head += `${rawHeaders[i]}: ${rawHeaders[i + 1]}\r\n`;
  return `${head}\r\n`;
}

function reject(socket: Duplex, status: number, extra: string[] = []): void {
  const headers = ['server', 'portico', 'content-length', '0', 'connection', 'close', ...extra];
  socket.end(rawResponse(status, headers));
}

export function handleUpgrade(
  rt: ProxyRuntime,
  listener: ListenerContext,
  req: ClientRequest,
  socket: Duplex,
  head: Buffer,
): void {
  socket.on('error', () => socket.destroy());
  // Once the proxy's side is ended and flushed (refused or declined upgrade), the client gets a short grace to
  // read it and close; its further bytes are dropped. Without this a client that never closes keeps the socket.
  socket.once('finish', () => {
    socket.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });
  const plan = resolveRequest(rt, rt.snapshot, listener.name, listener.proto, req);
  rt.metrics.request(listener.name, plan.routeName, plan.kind === 'forward' ? 101 : plan.status, 0);
  if (plan.kind !== 'forward') {
    reject(socket, plan.status, plan.kind === 'redirect' ? ['location', plan.location] : []);
    return;
  }

  const up = httpRequest({
    host: plan.endpoint.address,
    port: plan.endpoint.port,
    method: req.method,
    path: plan.target,
    headers: upstreamHeaders(req, plan, listener.proto, true, undefined),
    agent: false,
    setHost: false,
  });
  const timer =
    plan.action.timeoutMs > 0
      ? setTimeout(() => {
          up.destroy();
          reject(socket, 504);
        }, plan.action.timeoutMs)
      : undefined;
  socket.on('close', () => up.destroy());
  up.on('error', () => {
    clearTimeout(timer);
    rt.metrics.upstreamError(plan.cluster.name, 'upgrade');
    if (socket.writable) reject(socket, 502);
  });
  // The backend declined the upgrade: relay its ordinary response and close.
  up.on('response', (upRes) => {
    clearTimeout(timer);
    const kept = Object.entries(responseHeaders(upRes.rawHeaders)).flatMap(([name, value]) =>
      (Array.isArray(value) ? value : [value]).flatMap((v) => [name, v]),
    );
    // Hop-by-hop headers dropped, so the body is delimited by the close.
    socket.write(rawResponse(upRes.statusCode ?? 502, [...kept, 'connection', 'close']));
    upRes.pipe(socket);
  });
  up.on('upgrade', (upRes, upSocket, upHead) => {
    clearTimeout(timer);
    upSocket.on('error', () => socket.destroy());
    socket.on('error', () => upSocket.destroy());
    // WebSocket has its own close handshake, so a half-close on either side ends the whole tunnel.
    upSocket.on('end', () => socket.destroy());
    socket.on('end', () => upSocket.destroy());
    upSocket.on('close', () => socket.destroy());
    socket.on('close', () => upSocket.destroy());
    rt.tunnels.add(socket);
    socket.on('close', () => rt.tunnels.delete(socket));
    socket.write(rawResponse(101, upRes.rawHeaders));
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) upSocket.write(head);
    upSocket.pipe(socket);
    socket.pipe(upSocket);
  });
  up.end();
}

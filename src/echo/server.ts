// The echo test backend: replies with what it received as JSON, plus a few knobs for tests
// (`/status/NNN`, `?delay=`, `X-Echo-Set-Header`) and a WebSocket echo. The same port speaks h2c with prior
// knowledge (the same replies, and the gRPC echo service of grpc.ts).
import { createServer, type Server } from 'node:http';
import { createServer as createH2Server, type Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { matchPreface, PREFACE_MORE, PREFACE_YES } from '../proxy/downstream/h2/preface.js';
import { serveGrpc } from './grpc.js';
import { acceptWebSocket } from './websocket.js';

/** What reply() reads of a request, HTTP/1.1 or HTTP/2 alike. */
interface EchoRequest {
  url?: string;
  method?: string;
  httpVersion: string;
  rawHeaders: string[];
  headers: Record<string, string | string[] | undefined>;
}

/** What reply() writes of a response, HTTP/1.1 or HTTP/2 alike. */
interface EchoResponse {
  setHeader(name: string, value: string[]): unknown;
  writeHead(status: number, headers?: Record<string, string | number>): unknown;
  end(): unknown;
  end(body: string): unknown;
  on(event: 'close', listener: () => void): unknown;
}

export interface EchoIdentity {
  namespace: string;
  ingress: string;
  service: string;
  pod: string;
}

export function identityFromEnv(env: NodeJS.ProcessEnv): EchoIdentity {
  return {
    namespace: env.NAMESPACE ?? '',
    ingress: env.INGRESS_NAME ?? '',
    service: env.SERVICE_NAME ?? '',
    pod: env.POD_NAME ?? '',
  };
}

/** `X-Request-Id` style, as Go's echo servers print header names. */
function canonicalName(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

function headerLists(req: EchoRequest): Record<string, string[]> {
  // A Map: a client's `__proto__` or `constructor` field is a name like any other, not a prototype member.
  const out = new Map<string, string[]>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.startsWith(':')) continue;
    const name = canonicalName(req.rawHeaders[i]!.toLowerCase());
    const values = out.get(name);
    if (values === undefined) out.set(name, [req.rawHeaders[i + 1]!]);
    else values.push(req.rawHeaders[i + 1]!);
  }
  // fromEntries defines own properties, so even `__proto__` becomes a plain key of the JSON object.
  return Object.fromEntries(out);
}

/** `250ms`, `1s`, `1.5s`, `2m`; a bare number is seconds. Anything else: no delay. */
export function parseDelay(value: string | null): number {
  if (value === null) return 0;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  if (match === null) return 0;
  const n = Number(match[1]);
  const unit = match[2] ?? 's';
  return Math.min(n * (unit === 'ms' ? 1 : unit === 's' ? 1000 : 60_000), 600_000);
}

function extraHeaders(req: EchoRequest): [string, string][] {
  const raw = req.headers['x-echo-set-header'];
  if (raw === undefined) return [];
  const out: [string, string][] = [];
  for (const pair of (Array.isArray(raw) ? raw.join(',') : raw).split(',')) {
    const colon = pair.indexOf(':');
    if (colon <= 0) continue;
    const name = pair.slice(0, colon).trim();
    if (/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) out.push([name, pair.slice(colon + 1).trim()]);
  }
  return out;
}

function reply(identity: EchoIdentity, req: EchoRequest, res: EchoResponse): void {
  const target = req.url ?? '/';
  const status = /^\/status\/([1-5]\d\d)(?:[/?]|$)/.exec(target);
  const code = status === null ? 200 : Number(status[1]);
  const body = JSON.stringify({
    path: target,
    host: req.headers.host ?? req.headers[':authority'] ?? '',
    method: req.method,
    proto: `HTTP/${req.httpVersion}`,
    headers: headerLists(req),
    ...identity,
  });
  const extra = new Map<string, string[]>();
  for (const [name, value] of extraHeaders(req)) extra.set(name, [...(extra.get(name) ?? []), value]);
  for (const [name, values] of extra) res.setHeader(name, values);
  if (code < 200 || code === 204 || code === 304) {
    res.writeHead(code < 200 ? 200 : code);
    res.end();
    return;
  }
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function answer(identity: EchoIdentity, req: EchoRequest & Readable, res: EchoResponse): void {
  const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
  const delay = parseDelay(query.get('delay'));
  req.resume();
  req.on('end', () => {
    if (delay === 0) return reply(identity, req, res);
    const timer = setTimeout(() => reply(identity, req, res), delay);
    res.on('close', () => clearTimeout(timer));
  });
}

/**
 * Sends connections that open with the HTTP/2 preface to `h2`, the rest to the HTTP/1.1 server's own
 * connection handling, with the bytes read to tell them apart put back.
 */
function splitByPreface(server: Server, h2: ReturnType<typeof createH2Server>, undecided: Set<Socket>): void {
  const http1 = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    let seen: Buffer | undefined;
    undecided.add(socket);
    // Gone before saying anything: nobody else would close a half-open socket.
    const onEnd = (): void => {
      socket.destroy();
    };
    socket.on('end', onEnd);
    socket.on('close', () => undecided.delete(socket));
    socket.on('error', () => socket.destroy());
    const onData = (chunk: Buffer): void => {
      seen = seen === undefined ? chunk : Buffer.concat([seen, chunk]);
      const match = matchPreface(seen);
      if (match === PREFACE_MORE) return;
      undecided.delete(socket);
      socket.off('end', onEnd);
      socket.off('data', onData);
      socket.pause();
      socket.unshift(seen);
      if (match === PREFACE_YES) h2.emit('connection', socket);
      else {
        for (const listener of http1) listener.call(server, socket);
        socket.resume();
      }
    };
    socket.on('data', onData);
  });
}

export function createEchoServer(identity: EchoIdentity): Server {
  const server = createServer((req, res) => answer(identity, req, res));
  server.on('upgrade', (req, socket, head) => acceptWebSocket(req, socket, head));
  server.on('clientError', (_error, socket) => socket.destroy());
  const h2 = createH2Server({ settings: { maxConcurrentStreams: 250 } });
  h2.on('request', (req, res) => {
    const type = req.headers['content-type'];
    if (typeof type === 'string' && type.startsWith('application/grpc')) serveGrpc(identity.pod, req, res);
    else answer(identity, req, res);
  });
  h2.on('sessionError', () => {});
  const undecided = new Set<Socket>();
  splitByPreface(server, h2, undecided);
  // Closing the HTTP/1.1 server's connections leaves HTTP/2 sessions and sockets still undecided: they go too.
  const closeAll = server.closeAllConnections.bind(server);
  server.closeAllConnections = () => {
    closeAll();
    for (const session of sessions) session.destroy();
    for (const socket of undecided) socket.destroy();
  };
  const sessions = new Set<Http2Session>();
  h2.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  return server;
}

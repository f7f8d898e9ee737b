// The echo test backend: replies with what it received as JSON, plus a few knobs for tests
// (`/status/NNN`, `?delay=`, `X-Echo-Set-Header`) and a WebSocket echo.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { acceptWebSocket } from './websocket.js';

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

function headerLists(req: IncomingMessage): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = canonicalName(req.rawHeaders[i]!.toLowerCase());
    const values = out[name] ?? [];
    values.push(req.rawHeaders[i + 1]!);
    out[name] = values;
  }
  return out;
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

function extraHeaders(req: IncomingMessage): [string, string][] {
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

function reply(identity: EchoIdentity, req: IncomingMessage, res: ServerResponse): void {
  const target = req.url ?? '/';
  const status = /^\/status\/([1-5]\d\d)(?:[/?]|$)/.exec(target);
  const code = status === null ? 200 : Number(status[1]);
  const body = JSON.stringify({
    path: target,
    host: req.headers.host ?? '',
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

export function createEchoServer(identity: EchoIdentity): Server {
  const server = createServer((req, res) => {
    const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    const delay = parseDelay(query.get('delay'));
    req.resume();
    req.on('end', () => {
      if (delay === 0) return reply(identity, req, res);
      const timer = setTimeout(() => reply(identity, req, res), delay);
      res.on('close', () => clearTimeout(timer));
    });
  });
  server.on('upgrade', (req, socket, head) => acceptWebSocket(req, socket, head));
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

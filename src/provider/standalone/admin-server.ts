// The standalone controller's admin API (HTTP on loopback): health, readiness, resources with their status,
// and each fleet's config dump. Read-only; it serves whatever `getState()` returns at request time, redacted,
// and only to requests that name it in their Host header (no DNS-rebinding page can read it).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PORTS } from '../../ir/well-known.js';
import { type AdminRequestGuard, refuseAdminRequest } from '../../platform/admin-request-guard.js';
import { PorticoError } from '../../platform/errors.js';
import { formatHostPort, parseHostPort } from '../../platform/host-port.js';
import { requireLoopback } from '../../platform/listen-scope.js';
import { redact } from '../../platform/redact.js';
import type { AdminState, ResourceObject } from './admin-state.js';

export const DEFAULT_ADMIN_ADDRESS = `127.0.0.1:${PORTS.controllerHttp}`;

export interface AdminServerOptions {
  /** `HOST:PORT`; port 0 picks a free one (tests). */
  address?: string;
  /** The option the address came from, named in errors. */
  source?: string;
  /** Listen on a non-loopback address (the API has no authentication): `--allow-remote-admin`. */
  allowRemote?: boolean;
  getState: () => AdminState;
}

export interface AdminServer {
  /** The address actually bound, `HOST:PORT`. */
  readonly address: string;
  close(): Promise<void>;
}

/** Why a controller's own server could not listen on `address`, naming the flag that sets it. */
export function listenError(source: string, address: string, error: NodeJS.ErrnoException): PorticoError {
  const reason =
    error.code === 'EADDRINUSE'
      ? `the address is in use (is another controller running? give each its own ${source}, e.g. 127.0.0.1:0)`
      : error.message;
  return new PorticoError('E_IO', `${source}: cannot listen on ${address}: ${reason}`, { cause: error });
}

export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const source = options.source ?? '--admin-address';
  const wanted = parseHostPort(options.address ?? DEFAULT_ADMIN_ADDRESS, source);
  requireLoopback(
    wanted,
    source,
    'the admin API has no authentication',
    '--allow-remote-admin',
    options.allowRemote === true,
  );
  const guard: AdminRequestGuard = { host: wanted.host, port: wanted.port };
  const server = createServer((request, response) => {
    try {
      const refused = refuseAdminRequest(request, guard, false);
      if (refused !== undefined) sendJson(response, 403, { error: refused });
      else handle(request, response, options.getState);
    } catch (error) {
      // A failing state producer must not take the admin API down with it.
      sendJson(response, 500, { error: `cannot produce the state: ${(error as Error).message}` });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(listenError(source, formatHostPort(wanted), error)),
    );
    server.listen(wanted.port, wanted.host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  guard.port = bound.port;
  return {
    address: formatHostPort({ host: bound.address, port: bound.port }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function handle(request: IncomingMessage, response: ServerResponse, getState: () => AdminState): void {
  const url = new URL(request.url ?? '/', 'http://admin');
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    sendJson(response, 405, { error: `method ${request.method} not allowed` });
    return;
  }
  switch (url.pathname) {
    case '/healthz':
      sendText(response, 200, 'ok\n');
      return;
    case '/readyz':
      if (getState().ready) sendText(response, 200, 'ok\n');
      else sendText(response, 503, 'not ready: the first translation has not finished\n');
      return;
    case '/api/resources': {
      const kind = url.searchParams.get('kind');
      const namespace = url.searchParams.get('namespace');
      const name = url.searchParams.get('name');
      const items = getState()
        .resources.filter(
          (r) =>
            (kind === null || r.kind === kind) &&
            (namespace === null || r.metadata.namespace === namespace) &&
            (name === null || r.metadata.name === name),
        )
        .slice()
        .sort(compareResources);
      sendJson(response, 200, redact({ items }));
      return;
    }
    case '/api/errors':
      sendJson(response, 200, { items: getState().errors });
      return;
    case '/api/fleets': {
      const fleet = url.searchParams.get('fleet');
      const items = getState()
        .fleets.filter((f) => fleet === null || f.fleet === fleet)
        .slice()
        .sort((a, b) => compareText(a.fleet, b.fleet));
      sendJson(response, 200, redact({ items }));
      return;
    }
    default:
      sendJson(response, 404, {
        error: `no such path ${url.pathname}; try /healthz, /readyz, /api/resources?kind=Gateway, /api/fleets, /api/errors`,
      });
  }
}

function compareResources(a: ResourceObject, b: ResourceObject): number {
  return (
    compareText(a.kind, b.kind) ||
    compareText(a.metadata.namespace ?? '', b.metadata.namespace ?? '') ||
    compareText(a.metadata.name, b.metadata.name)
  );
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  send(response, status, 'application/json', `${JSON.stringify(body)}\n`);
}

function sendText(response: ServerResponse, status: number, body: string): void {
  send(response, status, 'text/plain; charset=utf-8', body);
}

function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

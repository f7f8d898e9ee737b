// The proxy's side servers: admin API (config dump, version, drain, stats), Prometheus metrics, readiness.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PorticoError } from '../errors.js';
import { parseHostPort } from '../host-port.js';
import type { FleetConfig } from '../ir/fleet-config.js';
import { redactSecrets } from '../ir/redact.js';

export interface AdminView {
  readonly ready: boolean;
  readonly draining: boolean;
  /** The drain finished: listeners closed, requests in flight done (or cut at the maximum). */
  readonly drained: boolean;
  config(): FleetConfig | undefined;
  version(): { version: string; appliedAt: string } | undefined;
  inFlight(): number;
  startDrain(): void;
  metrics(): string;
}

function send(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function json(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, `${JSON.stringify(value, null, 2)}\n`);
}

type Route = (req: IncomingMessage, res: ServerResponse) => void;

function adminRoutes(view: AdminView): Record<string, Route> {
  return {
    'GET /config_dump': (_req, res) => {
      const config = view.config();
      json(
        res,
        config === undefined ? 404 : 200,
        config === undefined ? { error: 'no config applied' } : redactSecrets(config),
      );
    },
    'GET /version': (_req, res) => json(res, 200, view.version() ?? { version: null }),
    'POST /drain': (_req, res) => {
      view.startDrain();
      json(res, 202, { draining: true, inFlight: view.inFlight() });
    },
    'GET /stats': (_req, res) =>
      json(res, 200, {
        inFlight: view.inFlight(),
        ready: view.ready,
        draining: view.draining,
        drained: view.drained,
      }),
  };
}

function serve(routes: Record<string, Route>): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const route = routes[`${req.method} ${path}`];
    if (route !== undefined) route(req, res);
    else send(res, 404, 'not found\n', 'text/plain');
  });
}

export interface SideServer {
  name: 'admin' | 'metrics' | 'ready';
  server: Server;
}

export async function startSideServers(
  view: AdminView,
  addresses: { admin?: string; metrics?: string; ready?: string },
): Promise<SideServer[]> {
  const metrics: Route = (_req, res) => send(res, 200, view.metrics(), 'text/plain; version=0.0.4');
  const ready: Route = (_req, res) =>
    send(res, view.ready ? 200 : 503, view.ready ? 'ready\n' : 'not ready\n', 'text/plain');
  const wanted: [SideServer['name'], string | undefined, Record<string, Route>][] = [
    ['admin', addresses.admin, adminRoutes(view)],
    ['metrics', addresses.metrics, { 'GET /metrics': metrics, 'GET /stats/prometheus': metrics }],
    ['ready', addresses.ready, { 'GET /ready': ready }],
  ];
  const started: SideServer[] = [];
  try {
    for (const [name, address, routes] of wanted) {
      if (address === undefined) continue;
      const { host, port } = parseHostPort(address, `${name} address`);
      const server = serve(routes);
      await new Promise<void>((resolve, reject) => {
        server.once('error', (error) =>
          reject(new PorticoError('E_IO', `${name} server on ${address}: ${error.message}`)),
        );
        server.listen({ host, port }, resolve);
      });
      started.push({ name, server });
    }
  } catch (error) {
    for (const s of started) s.server.close();
    throw error;
  }
  return started;
}

export function sideServerAddress(s: SideServer): { port: number; address: string } {
  const info = s.server.address() as AddressInfo | null;
  return { port: info?.port ?? 0, address: info?.address ?? '' };
}

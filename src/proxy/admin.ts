// The proxy's side servers: admin API (config dump, version, drain, stats), Prometheus metrics, readiness and
// liveness. The admin API answers only requests naming it in their Host header, and a drain only a request that
// no web page can send (no Origin, a custom header): a browser's CSRF or DNS rebinding cannot close a Gateway.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FleetConfig } from '../ir/fleet-config.js';
import { type ProxySettings, parseProxySettings } from '../ir/proxy-settings.js';
import { type AdminRequestGuard, refuseAdminRequest } from '../platform/admin-request-guard.js';
import { isPorticoError, PorticoError } from '../platform/errors.js';
import { parseHostPort } from '../platform/host-port.js';
import { redact } from '../platform/redact.js';
import { type ReconfigureOutcome, type RuntimeSettings, runtimeSettings } from './live-settings.js';

export interface AdminView {
  readonly ready: boolean;
  readonly draining: boolean;
  /** The drain finished: listeners closed, requests in flight done (or cut at the maximum). */
  readonly drained: boolean;
  /** Why the proxy cannot serve although running (drained, a listener closed), or undefined when it can. */
  notLive(): string | undefined | Promise<string | undefined>;
  config(): FleetConfig | undefined;
  version(): { version: string; appliedAt: string } | undefined;
  /** Asynchronous where workers are asked (a proxy with several). */
  inFlight(): number | Promise<number>;
  startDrain(): void;
  /** New settings while serving (PUT /settings). */
  reconfigure(settings: RuntimeSettings): Promise<ReconfigureOutcome>;
  /** The most workers PUT /settings may ask for. */
  readonly maxWorkers: number;
  metrics(): string | Promise<string>;
}

function send(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function json(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, `${JSON.stringify(value, null, 2)}\n`);
}

type Route = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Routes that change the proxy: they need the mutation guard on top of the Host check. */
const MUTATIONS = new Set(['POST /drain', 'PUT /settings']);

/** A settings body is a few hundred bytes; anything near this is not one. */
const MAX_SETTINGS_BYTES = 64 * 1024;

function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    let body = '';
    let over = false;
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      if (over) return;
      body += chunk;
      if (body.length > limit) over = true;
    });
    req.on('end', () => resolve(over ? undefined : body));
    req.on('error', reject);
  });
}

/** The settings last taken through PUT /settings; null until one was (the proxy runs on its flags). */
interface TakenSettings {
  settings: ProxySettings | null;
}

/**
 * PUT /settings: 200 once applied, 400 naming the field refused, 409 when only a restart can apply them. What
 * was taken is shown by GET /settings, so a supervisor sees a change it did not make and puts its own back.
 */
async function putSettings(
  view: AdminView,
  taken: TakenSettings,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await readBody(req, MAX_SETTINGS_BYTES);
  if (body === undefined) {
    json(res, 413, { error: `settings over ${MAX_SETTINGS_BYTES} bytes` });
    return;
  }
  let settings: ProxySettings;
  try {
    settings = parseProxySettings(JSON.parse(body));
  } catch (error) {
    const why = isPorticoError(error) ? error.message : `not JSON: ${(error as Error).message}`;
    json(res, 400, { error: why });
    return;
  }
  if (settings.workers > view.maxWorkers) {
    json(res, 400, { error: `workers: expected at most ${view.maxWorkers} (this proxy's --max-workers)` });
    return;
  }
  const outcome = await view.reconfigure(runtimeSettings(settings));
  if (outcome.ok) taken.settings = settings;
  json(res, outcome.ok ? 200 : 409, outcome.ok ? { applied: true } : { error: outcome.error });
}

function adminRoutes(view: AdminView): Record<string, Route> {
  const taken: TakenSettings = { settings: null };
  return {
    'GET /config_dump': (_req, res) => {
      const config = view.config();
      json(
        res,
        config === undefined ? 404 : 200,
        config === undefined ? { error: 'no config applied' } : redact(config),
      );
    },
    'GET /version': (_req, res) => json(res, 200, view.version() ?? { version: null }),
    'PUT /settings': (req, res) => putSettings(view, taken, req, res),
    'GET /settings': (_req, res) => json(res, 200, taken.settings),
    'POST /drain': async (_req, res) => {
      view.startDrain();
      json(res, 202, { draining: true, inFlight: await view.inFlight() });
    },
    'GET /stats': async (_req, res) =>
      json(res, 200, {
        pid: process.pid,
        inFlight: await view.inFlight(),
        ready: view.ready,
        draining: view.draining,
        drained: view.drained,
      }),
  };
}

/** `guard`: check requests against the server's own address (the admin API); absent: anyone may read. */
function serve(routes: Record<string, Route>, guard?: AdminRequestGuard): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const key = `${req.method} ${path}`;
    const refused = guard === undefined ? undefined : refuseAdminRequest(req, guard, MUTATIONS.has(key));
    if (refused !== undefined) {
      json(res, 403, { error: refused });
      return;
    }
    const route = routes[key];
    if (route === undefined) {
      send(res, 404, 'not found\n', 'text/plain');
      return;
    }
    Promise.resolve(route(req, res)).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, `${(error as Error).message}\n`, 'text/plain');
      else res.destroy();
    });
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
  const metrics: Route = async (_req, res) =>
    send(res, 200, await view.metrics(), 'text/plain; version=0.0.4');
  // Ready: has a config, is not draining, and every listener it bound still accepts.
  const ready: Route = async (_req, res) => {
    const problem = view.ready ? await view.notLive() : 'no config applied yet, or draining';
    send(
      res,
      problem === undefined ? 200 : 503,
      problem === undefined ? 'ready\n' : `not ready: ${problem}\n`,
      'text/plain',
    );
  };
  // Live: the event loop answers (a hung proxy times out) and it can still serve; a restart is the cure otherwise.
  const live: Route = async (_req, res) => {
    const problem = await view.notLive();
    send(
      res,
      problem === undefined ? 200 : 503,
      problem === undefined ? 'live\n' : `not live: ${problem}\n`,
      'text/plain',
    );
  };
  const wanted: [SideServer['name'], string | undefined, Record<string, Route>, boolean][] = [
    ['admin', addresses.admin, adminRoutes(view), true],
    ['metrics', addresses.metrics, { 'GET /metrics': metrics, 'GET /stats/prometheus': metrics }, false],
    ['ready', addresses.ready, { 'GET /ready': ready, 'GET /live': live }, false],
  ];
  const started: SideServer[] = [];
  try {
    for (const [name, address, routes, guarded] of wanted) {
      if (address === undefined) continue;
      const { host, port } = parseHostPort(address, `${name} address`);
      const guard: AdminRequestGuard | undefined = guarded ? { host, port } : undefined;
      const server = serve(routes, guard);
      await new Promise<void>((resolve, reject) => {
        server.once('error', (error: NodeJS.ErrnoException) => {
          // Its own address taken means this proxy cannot run here at all: a distinct code, so a supervisor moves it.
          const code = error.code === 'EADDRINUSE' ? 'E_ADDRESS_IN_USE' : 'E_IO';
          reject(new PorticoError(code, `${name} server on ${address}: ${error.message}`, { cause: error }));
        });
        server.listen({ host, port }, resolve);
      });
      if (guard !== undefined) guard.port = (server.address() as AddressInfo).port;
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

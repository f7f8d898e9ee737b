// End-to-end harness for `portico standalone`: the built CLI as a child process, examples copied to a temp
// dir with their EndpointSlices pointed at echo servers on OS-chosen ports, and plain HTTP through the proxies.
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { Agent, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { createEchoServer } from '../../../src/echo/server.js';
import { parseHostPort } from '../../../src/platform/host-port.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import { stopStandalone } from '../../../src/provider/standalone/stop.js';
import { type Child, startPortico, waitForOutput } from '../../support/child.js';
import { closeServer, type EchoBody, httpRequest, listen, type Reply } from '../../support/http.js';
import { REPO_ROOT } from '../../support/portico.js';

export interface TestContext {
  after: (fn: () => Promise<void> | void) => void;
}

const cleanups = new WeakMap<TestContext, (() => Promise<void> | void)[]>();

/**
 * Runs `fn` when the test ends, last registered first (node:test runs its own hooks first-registered first, and
 * stops at a failing one): a controller stops before its state directory is removed, and every cleanup runs.
 */
export function defer(t: TestContext, fn: () => Promise<void> | void): void {
  let stack = cleanups.get(t);
  if (stack === undefined) {
    const list: (() => Promise<void> | void)[] = [];
    stack = list;
    cleanups.set(t, list);
    t.after(async () => {
      const errors: unknown[] = [];
      for (const cleanup of list.reverse()) {
        try {
          await cleanup();
        } catch (error) {
          errors.push(error);
        }
      }
      if (errors.length > 0) throw errors[0];
    });
  }
  stack.push(fn);
}

export async function tempDir(t: TestContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `portico-${prefix}-`));
  defer(t, () => rm(dir, { recursive: true, force: true, maxRetries: 3 }));
  return dir;
}

/** An echo backend on a free loopback port; replies name `pod`. */
export async function echo(t: TestContext, pod: string): Promise<number> {
  const server: Server = createEchoServer({ namespace: 'default', ingress: 'eg', service: pod, pod });
  const port = await listen(server);
  defer(t, () => closeServer(server));
  return port;
}

/** Rewrites every EndpointSlice port found in `ports` (example port → real port) in one YAML text. */
function rewriteEndpointPorts(text: string, ports: ReadonlyMap<number, number>): string {
  const docs = parseAllDocuments(text);
  for (const doc of docs) {
    if (doc.get('kind') !== 'EndpointSlice') continue;
    const list = doc.toJS() as { ports?: { port: number }[] };
    list.ports?.forEach((p, i) => {
      const to = ports.get(p.port);
      if (to !== undefined) doc.setIn(['ports', i, 'port'], to);
    });
  }
  return docs.map((d) => d.toString()).join('');
}

/** Copies `examples/<name>` into `dir`, EndpointSlice ports rewritten; returns the copy's path. */
async function copyExample(name: string, dir: string, ports: ReadonlyMap<number, number>): Promise<string> {
  const to = join(dir, name);
  await cp(join(REPO_ROOT, 'examples', name), to, { recursive: true });
  const entries = await readdir(to, { recursive: true });
  for (const entry of entries) {
    if (!entry.endsWith('.yaml') || entry.endsWith('config.yaml')) continue;
    const file = join(to, entry);
    await writeFile(file, rewriteEndpointPorts(await readFile(file, 'utf8'), ports));
  }
  return to;
}

export interface ExampleCopy {
  /** The fresh temp dir holding the copy, removed when the test ends. */
  dir: string;
  /** The copy of `examples/<name>`. */
  files: string;
  /** `<dir>/state`: where a controller serving the copy keeps its state. */
  stateDir: string;
}

/**
 * `examples/<name>` copied into a fresh temp dir with its backends served: example port 3001 + i goes to an
 * echo server whose replies name `pods[i]`.
 */
/** The GatewayClass of Portico's own controller, as the first document of a test's YAML (its `---` after it). */
export const PORTICO_CLASS_YAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portico}
spec: {controllerName: gateway.portico.io/gatewayclass-controller}
---
`;

/**
 * A selector-less Service `name` (its port `servicePort`, named `portName`) and the EndpointSlice naming a local
 * server on `port` (127.0.0.1), as a cluster holds a backend outside it; no `---` before or after.
 */
export function localServiceYaml(
  name: string,
  servicePort: number,
  port: number,
  portName = 'main',
  protocol: 'TCP' | 'UDP' = 'TCP',
): string {
  return `apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: default}
spec: {ports: [{name: ${portName}, port: ${servicePort}, protocol: ${protocol}}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}-1, namespace: default, labels: {kubernetes.io/service-name: ${name}}}
addressType: IPv4
ports: [{name: ${portName}, port: ${port}, protocol: ${protocol}}]
endpoints: [{addresses: ["127.0.0.1"]}]
`;
}

export async function exampleCopy(
  t: TestContext,
  name: string,
  pods: readonly string[],
): Promise<ExampleCopy> {
  const dir = await tempDir(t, name);
  const ports = new Map<number, number>();
  for (const [i, pod] of pods.entries()) ports.set(3001 + i, await echo(t, pod));
  const files = await copyExample(name, dir, ports);
  return { dir, files, stateDir: join(dir, 'state') };
}

const STARTUP_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 20_000;

/** `promise`, or a rejection naming what the controller failed to do within `ms`. */
function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the controller did not ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface RunningStandalone {
  child: Child;
  admin: string;
  discovery: string;
  stateDir: string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts `portico standalone` on free admin/discovery ports, waits for its startup line. Its proxies are stopped
 * with it (`--stop-proxies-on-exit`) unless `keepProxies`; whatever the test leaves running of the state
 * directory is stopped when it ends.
 */
export async function startStandalone(
  t: TestContext,
  options: {
    args: string[];
    pool: string;
    stateDir: string;
    discoveryAddress?: string;
    keepProxies?: boolean;
    /** Worker processes per proxy at most (default 1: these tests are about the controller; workers.test.ts has its own). */
    proxyWorkersMax?: number;
  },
): Promise<RunningStandalone> {
  defer(t, async () => {
    await stopStandalone({ stateDir: options.stateDir, log: discardingLogger, graceMs: 5000 });
  });
  const child = startPortico([
    'standalone',
    ...options.args,
    '--state-dir',
    options.stateDir,
    '--admin-address',
    '127.0.0.1:0',
    '--discovery-address',
    options.discoveryAddress ?? '127.0.0.1:0',
    '--address-pool',
    options.pool,
    '--proxy-drain-seconds',
    '0',
    '--proxy-workers-max',
    String(options.proxyWorkersMax ?? 1),
    ...(options.keepProxies === true ? [] : ['--stop-proxies-on-exit']),
  ]);
  let stopped: Promise<number | null> | undefined;
  const stop = (): Promise<number | null> => {
    if (stopped === undefined) {
      child.process.kill('SIGTERM');
      stopped = within(STOP_TIMEOUT_MS, child.exited, 'stop on SIGTERM').catch((error: Error) => {
        child.process.kill('SIGKILL');
        throw new Error(`${error.message}; its output:\n${child.stdout()}\n${child.stderr()}`);
      });
    }
    return stopped;
  };
  defer(t, async () => {
    await stop();
  });
  const line = await within(
    STARTUP_TIMEOUT_MS,
    waitForOutput(child, /admin API on http:\/\/(\S+), discovery on (\S+)/),
    'print its startup line',
  ).catch((error: Error) => {
    throw new Error(`${error.message}; its output:\n${child.stdout()}\n${child.stderr()}`);
  });
  return { child, admin: line[1]!, discovery: line[2]!, stateDir: options.stateDir, stop };
}

/** One HTTP request to `address:port` with the given Host, on a fresh connection unless an agent is given. */
export function send(
  address: string,
  port: number,
  host: string,
  path = '/',
  agent: false | Agent = false,
): Promise<Reply> {
  return httpRequest(port, path, { address, host, agent, timeoutMs: 5000 });
}

export function echoBody(reply: Reply): EchoBody {
  return JSON.parse(reply.body) as EchoBody;
}

/** Polls `probe` until it returns a value (not undefined), at most `timeoutMs`; the last error is kept. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export interface GatewayStatusView {
  addresses?: { type: string; value: string; routability?: string }[];
  conditions?: Condition[];
  listeners?: { name: string; attachedRoutes: number; conditions?: Condition[] }[];
}

export interface AdminResource {
  kind: string;
  metadata: { name: string; namespace?: string };
  status?: unknown;
}

/**
 * GET on the controller's admin API over a fresh connection: tests block their event loop in spawnSync, and a
 * pooled keep-alive socket the server closed meanwhile would fail the next request.
 */
export async function adminGet<T>(admin: string, path: string): Promise<T> {
  const { host: address, port } = parseHostPort(admin, 'admin');
  const reply = await httpRequest(port, path, { address, host: admin, agent: false, timeoutMs: 5000 });
  if (reply.status !== 200) throw new Error(`GET ${path}: HTTP ${reply.status} ${reply.body}`);
  return JSON.parse(reply.body) as T;
}

export async function adminResources(admin: string, query = ''): Promise<AdminResource[]> {
  return (await adminGet<{ items: AdminResource[] }>(admin, `/api/resources${query}`)).items;
}

export function condition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Waits for Gateway `namespace/name` to be Programmed and returns its address. */
export async function programmedAddress(admin: string, namespace: string, name: string): Promise<string> {
  return eventually(`Gateway ${namespace}/${name} Programmed`, async () => {
    const [gateway] = await adminResources(admin, `?kind=Gateway&namespace=${namespace}&name=${name}`);
    const status = gateway?.status as GatewayStatusView | undefined;
    if (condition(status?.conditions, 'Programmed')?.status !== 'True') return undefined;
    return status?.addresses?.[0]?.value;
  });
}

/** Waits until a request answers `status` (e.g. a route applied), returns that reply. */
export function untilStatus(
  address: string,
  port: number,
  host: string,
  path: string,
  status: number,
): Promise<Reply> {
  return eventually(`${host}${path} on ${address}:${port} → ${status}`, async () => {
    const reply = await send(address, port, host, path);
    return reply.status === status ? reply : undefined;
  });
}

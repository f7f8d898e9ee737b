// One Kubernetes edit's whole path in one process, with the product's own parts and real sockets but no cluster:
// watch events into the provider's resource watch (through an in-memory API client), the runner with the
// translator and the Kubernetes status sink (its writer counts, it does not write), the discovery server over
// mutual TLS on loopback, a discovery client and a proxy (one worker) serving an echo backend. Every stage
// reports to one trace, so an edit's time splits into its stages (bench/kubernetes-pass.ts prints them).
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseControllerConfig } from '../src/api/controller-config.js';
import { startDiscoveryClient } from '../src/discovery/client.js';
import { createDiscoveryServer } from '../src/discovery/server.js';
import { createEchoServer } from '../src/echo/server.js';
import type { ApiClient, JsonObject, WatchEvent } from '../src/provider/kubernetes/api-client.js';
import { createResourceWatch } from '../src/provider/kubernetes/resource-watch.js';
import { apiStatusSink } from '../src/provider/kubernetes/status-sink.js';
import type { StatusWriter } from '../src/provider/kubernetes/status-writer.js';
import { collectionPath, WATCHED_KINDS } from '../src/provider/kubernetes/watched-kinds.js';
import { createProxy } from '../src/proxy/proxy.js';
import { createRunner } from '../src/runner/runner.js';
import { fleetTls, testCertificates } from '../test/discovery/fixtures.js';

const NS = 'bench-routes';
const GATEWAY_API = 'gateway.networking.k8s.io/v1';
const CONTROLLER = 'gateway.portico.io/gatewayclass-controller';
const FLEET = `${NS}/eg`;

/** One stage reached: when (wall ms) and this process's CPU time so far (ms). */
export interface Mark {
  stage: string;
  t: number;
  cpu: number;
}

interface Pipeline {
  /**
   * The watch event of route `i` now showing `host` at `generation`, as one line from the API server; resolves
   * when the proxy has swapped in the config it led to.
   */
  edit(i: number, host: string, generation: number): Promise<void>;
  /** Resolves at the first `stage` mark made after `after` (a mark time), at once if there is one already. */
  reached(stage: string, after: number): Promise<void>;
  /** GET through the proxy's listener with `host`: the status code. */
  get(host: string): Promise<number>;
  marks: Mark[];
  /** Status writes the sink asked for (the writer only counts them). */
  statusWrites(): number;
  /** Resolves once the status sink has nothing left to write. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function routeRaw(i: number, host: string, generation: number, resourceVersion: number): JsonObject {
  return {
    apiVersion: GATEWAY_API,
    kind: 'HTTPRoute',
    metadata: {
      name: `r-${i}`,
      namespace: NS,
      uid: `uid-r-${i}`,
      generation,
      resourceVersion: String(resourceVersion),
      creationTimestamp: '2026-01-01T00:00:00Z',
      managedFields: [{ manager: 'bench', operation: 'Update', apiVersion: GATEWAY_API }],
    },
    spec: {
      parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'eg' }],
      hostnames: [host],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ group: '', kind: 'Service', name: 'echo', port: 8080, weight: 1 }],
        },
      ],
    },
  };
}

function baseObjects(echoPort: number): Map<string, JsonObject[]> {
  const meta = (name: string, namespace?: string) => ({
    name,
    ...(namespace === undefined ? {} : { namespace }),
    uid: `uid-${name}`,
    generation: 1,
    resourceVersion: '1',
    creationTimestamp: '2026-01-01T00:00:00Z',
  });
  return new Map<string, JsonObject[]>([
    ['GatewayClass', [{ metadata: meta('portico'), spec: { controllerName: CONTROLLER } }]],
    [
      'Gateway',
      [
        {
          metadata: meta('eg', NS),
          spec: { gatewayClassName: 'portico', listeners: [{ name: 'http', protocol: 'HTTP', port: 8080 }] },
        },
      ],
    ],
    [
      'Service',
      [
        {
          metadata: meta('echo', NS),
          spec: { ports: [{ name: 'http', port: 8080, protocol: 'TCP', targetPort: echoPort }] },
        },
      ],
    ],
    [
      'EndpointSlice',
      [
        {
          metadata: { ...meta('echo-1', NS), labels: { 'kubernetes.io/service-name': 'echo' } },
          addressType: 'IPv4',
          ports: [{ name: 'http', port: echoPort, protocol: 'TCP' }],
          endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
        },
      ],
    ],
    ['Namespace', [{ metadata: meta(NS) }]],
  ]);
}

/** An API client serving lists from memory and watches fed by `emit` (a line, parsed as the real client does). */
function memoryApiClient(lists: Map<string, JsonObject[]>): {
  client: ApiClient;
  emit(kind: string, line: string): void;
} {
  const byPath = new Map(
    WATCHED_KINDS.map((k) => [
      collectionPath(k.apiVersion, k.resource),
      { kind: k, items: lists.get(k.kind) },
    ]),
  );
  const watchers = new Map<string, (event: WatchEvent) => void>();
  const client: ApiClient = {
    async request(method, path) {
      const entry = byPath.get(path.split('?')[0]!);
      if (method !== 'GET' || entry === undefined) return { status: 404, body: {} };
      return { status: 200, body: { metadata: { resourceVersion: '1' }, items: entry.items ?? [] } };
    },
    watch(path, onEvent) {
      const entry = byPath.get(path.split('?')[0]!);
      if (entry !== undefined) watchers.set(entry.kind.kind, onEvent);
      return { done: new Promise<void>(() => {}), stop() {} };
    },
  };
  return { client, emit: (kind, line) => watchers.get(kind)?.(JSON.parse(line) as WatchEvent) };
}

export async function startPipeline(routes: number): Promise<Pipeline> {
  const marks: Mark[] = [];
  // Everything that marks runs in this process: a mark wakes whoever waits for it, nothing polls for it (a poll
  // would spin this process's CPU while an edit is under way, and that CPU time would land in the stages).
  const waiters: { stage: string; after: number; resolve: () => void }[] = [];
  const mark = (stage: string) => {
    const m = { stage, t: performance.now(), cpu: cpuMs() };
    marks.push(m);
    for (let w = waiters.length - 1; w >= 0; w--) {
      const waiter = waiters[w]!;
      if (waiter.stage !== stage || m.t <= waiter.after) continue;
      waiters.splice(w, 1);
      waiter.resolve();
    }
  };
  const reached = (stage: string, after: number) =>
    new Promise<void>((resolve) => {
      if (marks.some((m) => m.stage === stage && m.t > after)) resolve();
      else waiters.push({ stage, after, resolve });
    });
  const echo = createEchoServer({ namespace: NS, ingress: 'eg', service: 'echo', pod: 'echo-0' });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const echoPort = (echo.address() as AddressInfo).port;
  const lists = baseObjects(echoPort);
  lists.set(
    'HTTPRoute',
    Array.from({ length: routes }, (_, i) => routeRaw(i, `r-${i}.bench.test`, 1, 1)),
  );
  const api = memoryApiClient(lists);
  const config = parseControllerConfig(
    'bench',
    `apiVersion: gateway.portico.io/v1alpha1\nkind: PorticoGateway\ngateway:\n  controllerName: ${CONTROLLER}\nprovider:\n  type: Kubernetes\n`,
  );
  let wake = () => {};
  const resources = createResourceWatch({
    client: api.client,
    config,
    controllerNamespace: 'portico-gateway-system',
    onChange: () => wake(),
    log: { debug() {}, info() {}, warn() {}, error() {} },
  });
  await resources.start();

  const certs = testCertificates();
  const server = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls' },
    trace: mark,
  });
  const { port } = await server.start();
  let listenerPort = 0;
  let serving = () => {};
  const served = new Promise<void>((resolve) => {
    serving = resolve;
  });
  const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, trace: mark });
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet: FLEET,
    node: 'bench-proxy',
    tls: { ...fleetTls(FLEET), serverName: 'portico-gateway' },
    apply: async (fleetConfig, version, change) => {
      const outcome = await proxy.apply(fleetConfig, version, change);
      listenerPort = proxy.addresses().find((a) => a.listener !== 'admin')?.port ?? 0;
      if (listenerPort !== 0) serving();
      return outcome;
    },
    trace: mark,
  });

  let writes = 0;
  const writer: StatusWriter = {
    write: async () => {
      writes++;
      return undefined;
    },
  };
  const sink = apiStatusSink(resources, writer, () => true);
  // The controller's work after publishing runs in its own process in a cluster: here it waits for the swap,
  // so it neither delays the proxy's stages nor hides inside them; its own cost is marked on its own.
  let afterSwap = Promise.resolve();
  const runner = createRunner({
    translate: {
      controllerName: CONTROLLER,
      controllerNamespace: 'portico-gateway-system',
      deployType: 'ControllerNamespace',
    },
    source: { snapshot: () => resources.snapshot(), dataPlane: () => ({ fleets: {} }) },
    discovery: server,
    infra: {
      apply: async () => {
        await afterSwap;
        return {};
      },
    },
    statuses: {
      shown: sink.shown,
      show(statuses) {
        sink.show(statuses);
        mark('sink-shown');
      },
      showChanged(changed, removed) {
        sink.showChanged(changed, removed);
        mark('sink-shown');
      },
      wantsAll: () => sink.wantsAll(),
    },
    onError: (error) => {
      throw error;
    },
    trace: mark,
  });
  wake = () => runner.soon();
  await runner.now();
  // The proxy serves the config published now before the first edit: otherwise the first edit's config is the
  // first the proxy gets, and a GET right after its swap finds no listener yet (it is bound after the swap).
  await served;

  let resourceVersion = 10;
  const get = (host: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port: listenerPort,
        path: '/',
        headers: { host },
        agent: false,
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  return {
    marks,
    edit(i, host, generation) {
      const line = JSON.stringify({
        type: 'MODIFIED',
        object: routeRaw(i, host, generation, ++resourceVersion),
      });
      mark('bench-edit');
      let released = () => {};
      afterSwap = new Promise((resolve) => {
        released = resolve;
      });
      const swapped = reached('proxy-swapped', performance.now());
      void swapped.then(() => released());
      api.emit('HTTPRoute', line);
      mark('event-applied');
      return swapped;
    },
    reached,
    get,
    statusWrites: () => writes,
    idle: () => sink.idle(),
    async close() {
      runner.stop();
      sink.stop();
      resources.stop();
      await client.stop();
      await proxy.close();
      await server.close();
      await new Promise<void>((resolve) => echo.close(() => resolve()));
    },
  };
}

// Propagation at scale through the real API server: Portico installed with its chart on the test cluster, one
// Gateway, HTTPRoutes created through the API server with 16 requests in flight, in steps up to the largest
// size. For each size: the time from the step's last create until its last route is served through the proxy,
// the time from the step's first create until every route shows Accepted, one edit's propagation (a PATCH of a
// route's hostname until the new name is served; mean and p99 over --edits), and the controller's memory and
// idle CPU (its own /metrics). Peer in the same run: a request on an existing route, the floor every
// propagation figure includes. The published figures of other gateways are printed beside for reference.
// Run: npm run build && npm run toolchain && npm run bench:propagation-kubernetes [-- --sizes 500,2000,5000]
// [--edits 20] [--in-flight 16] [--idle-seconds 10] [--stages]. Sizes are steps of one run: 2,000 adds 1,500 to
// 500. --stages also prints where each size's edits went, stage by stage: the controller and the proxies append
// --trace-events lines ($PORTICO_TRACE_EVENTS, set on the controller's Deployment and through the class's
// DataPlaneProxy) to a file on their pod's /dev/shm, read back with kubectl exec; the same clock, one machine.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type Cluster, startCluster } from '../test/cluster/harness.js';
import { asList, call, type Loose, type WatchStream, watch } from '../test/cluster/kube-api.js';
import { install, namespaceLogs } from '../test/e2e/kubernetes/install.js';
import {
  echoNamespace,
  gateway,
  gatewayClass,
  get,
  programmedAddress,
} from '../test/e2e/kubernetes/traffic.js';
import { median } from './load.js';
import { CONFIG_PATH_STAGES, parseTrace, stageTable, type TraceEvent } from './propagation-stages.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '500,2000,5000' },
    edits: { type: 'string', default: '20' },
    'in-flight': { type: 'string', default: '16' },
    'idle-seconds': { type: 'string', default: '10' },
    stages: { type: 'boolean', default: false },
  },
});
const STAGES = values.stages;
const TRACE_FILE = '/dev/shm/portico-trace';
/**
 * One edit on the cluster: the PATCH until the controller's watch has it, its pass, discovery, the proxy (its
 * primary, then the first worker's stages). The PATCH's own answer (bench-patched) may come before or after the
 * watch event, so it is reported beside the chain.
 */
const CLUSTER_STAGES = [
  'bench-edit',
  'watch-event',
  'pass',
  'snapshot',
  ...CONFIG_PATH_STAGES,
  'bench-200',
] as const;
/** The bench's own event at `stage`, on the trace lines' clock (epoch ms); its CPU time is not comparable: 0. */
const benchMark = (stage: string): TraceEvent => ({
  t: performance.timeOrigin + performance.now(),
  pid: 'bench',
  cpuUs: 0,
  stage,
});
const SIZES = values.sizes.split(',').map(Number);
const EDITS = Number(values.edits);
const IN_FLIGHT = Number(values['in-flight']);
const IDLE_MS = Number(values['idle-seconds']) * 1000;
const NS = 'bench-routes';
const SYSTEM = 'portico-gateway-system';
const PORT = 8080;
const ROUTES = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`;
/** Published one-route propagation of peers (gateway-api-bench), for reference only: not measured here. */
const PEERS =
  'agentgateway 16.6 ms, Envoy Gateway 320 ms, NGINX Gateway Fabric 508 ms (published, not this machine)';

function routeObject(i: number): unknown {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: `r-${i}`, namespace: NS },
    spec: {
      parentRefs: [{ name: 'eg' }],
      hostnames: [`r-${i}.bench.test`],
      rules: [{ backendRefs: [{ name: 'echo', port: 8080 }] }],
    },
  };
}

/**
 * Creates routes [from, to) with IN_FLIGHT requests at a time; resolves with the time of the first and last
 * create, and which route's create was answered last (with 16 in flight it need not be the highest number).
 */
async function createRoutes(
  cluster: Cluster,
  from: number,
  to: number,
): Promise<{ first: number; last: number; lastRoute: number }> {
  let next = from;
  let first = 0;
  let last = 0;
  let lastRoute = to - 1;
  const worker = async () => {
    for (let i = next++; i < to; i = next++) {
      const reply = await call(cluster, 'POST', ROUTES, routeObject(i));
      if (reply.status !== 201) throw new Error(`creating route r-${i}: HTTP ${reply.status}`);
      const now = performance.now();
      if (first === 0) first = now;
      if (now >= last) {
        last = now;
        lastRoute = i;
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { first: first || started, last, lastRoute };
}

/** Every route of [from, to) answers 200 (checked once the last created is served; not part of any figure). */
async function checkAllServed(address: string, from: number, to: number): Promise<void> {
  let next = from;
  const worker = async () => {
    for (let i = next++; i < to; i = next++) await servedAt(address, `r-${i}.bench.test`, 60_000);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/**
 * Polls with a fresh connection each time (as a new client would come), 2 ms apart, until `host` answers 200;
 * resolves with when the 200 arrived. A poll just too early costs at most one period: how long before the
 * answering poll the poll before it was sent (the figure's resolution) is pushed to `pollGaps` if given.
 */
async function servedAt(
  address: string,
  host: string,
  timeoutMs = 600_000,
  pollGaps?: number[],
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  let previous = Number.NaN;
  for (;;) {
    const sent = performance.now();
    const reply = await get(address, PORT, host).catch(() => undefined);
    if (reply?.status === 200) {
      if (!Number.isNaN(previous)) pollGaps?.push(sent - previous);
      return performance.now();
    }
    previous = sent;
    if (performance.now() > deadline) throw new Error(`${host} not served within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function accepted(route: Loose): boolean {
  const generation = route.metadata?.generation;
  return asList(route.status?.parents).some((p) =>
    asList(p.conditions).some(
      (c) => c.type === 'Accepted' && c.status === 'True' && c.observedGeneration === generation,
    ),
  );
}

/**
 * Follows the routes' statuses; `until(n)` resolves when n of them show Accepted for their current generation.
 * A loaded API server closes a watcher it finds slow ("unresponsiveness"): then the routes are listed again and
 * watched from that list's version, so a closed watch never leaves the count stuck.
 */
async function acceptedRoutes(cluster: Cluster) {
  const done = new Set<string>();
  const waiters: { n: number; resolve: (at: number) => void }[] = [];
  let stream: WatchStream | undefined;
  let closed = false;
  const record = (route: Loose, deleted = false) => {
    const name = String(route.metadata?.name);
    if (!deleted && accepted(route)) done.add(name);
    else done.delete(name);
  };
  const notify = () => {
    for (const w of waiters.splice(0)) {
      if (done.size >= w.n) w.resolve(performance.now());
      else waiters.push(w);
    }
  };
  const follow = async (): Promise<void> => {
    const list = await call(cluster, 'GET', ROUTES);
    done.clear();
    for (const route of asList(list.body.items)) record(route);
    notify();
    const version = String(list.body.metadata?.resourceVersion);
    const next = await watch(cluster, `${ROUTES}?watch=1&resourceVersion=${version}`);
    stream = next;
    next.onEvent((event) => {
      if (event.type === 'ERROR') return next.close();
      record(event.object, event.type === 'DELETED');
      notify();
    });
    void next.ended.then(() => {
      if (!closed) void follow();
    });
  };
  await follow();
  return {
    until: (n: number) =>
      new Promise<number>((resolve) => {
        if (done.size >= n) resolve(performance.now());
        else waiters.push({ n, resolve });
      }),
    close: () => {
      closed = true;
      stream?.close();
    },
  };
}

interface ControllerSample {
  resident: number;
  heap: number;
  fullTranslations: number;
  cpuSeconds: number;
  passes: number;
  translateSeconds: number;
  statusWrites: number;
}

/** The controller's own figures from its /metrics. */
async function controllerSample(cluster: Cluster): Promise<ControllerSample> {
  const service = await call(cluster, 'GET', `/api/v1/namespaces/${SYSTEM}/services/portico-gateway-metrics`);
  const reply = await get(String(service.body.spec?.clusterIP), 19001, 'metrics', '/metrics');
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(reply.body)?.[1]);
  return {
    resident: value('process_resident_memory_bytes'),
    heap: value('nodejs_heap_size_used_bytes'),
    fullTranslations: Number(
      /^portico_translations_total\{path="full"\} (\S+)$/m.exec(reply.body)?.[1] ?? Number.NaN,
    ),
    cpuSeconds: value('process_cpu_seconds_total'),
    passes: value('portico_reconciles_total'),
    translateSeconds: value('portico_translate_seconds_sum'),
    statusWrites: value('portico_status_writes_total'),
  };
}

/**
 * EDITS edits' propagation: each one's time from its PATCH until its new name is served, the bench's own trace
 * events around them, and each one's poll period before the first 200.
 */
async function editPropagation(
  cluster: Cluster,
  address: string,
  size: number,
): Promise<{ times: number[]; marks: TraceEvent[]; pollGaps: number[] }> {
  const times: number[] = [];
  const marks: TraceEvent[] = [];
  const pollGaps: number[] = [];
  for (let k = 0; k < EDITS; k++) {
    const i = k % size;
    const host = `edit-${size}-${k}.bench.test`;
    const patch = { spec: { hostnames: [host] } };
    marks.push(benchMark('bench-edit'));
    const sent = performance.now();
    const reply = await call(cluster, 'PATCH', `${ROUTES}/r-${i}`, patch, {
      contentType: 'application/merge-patch+json',
    });
    marks.push(benchMark('bench-patched'));
    if (reply.status !== 200) throw new Error(`patching r-${i}: HTTP ${reply.status}`);
    times.push((await servedAt(address, host, 60_000, pollGaps)) - sent);
    marks.push(benchMark('bench-200'));
  }
  return { times, marks, pollGaps };
}

/** Tracing on: the controller's Deployment gets the variable (it rolls), the proxies get it from their class. */
async function traceEverywhere(cluster: Cluster): Promise<{ namespace: string; name: string }> {
  cluster.kubectl([
    'set',
    'env',
    '-n',
    SYSTEM,
    'deployment/portico-gateway',
    `PORTICO_TRACE_EVENTS=${TRACE_FILE}`,
  ]);
  cluster.kubectl(['rollout', 'status', '-n', SYSTEM, 'deployment/portico-gateway', '--timeout=180s']);
  const reply = await call(
    cluster,
    'POST',
    `/apis/gateway.portico.io/v1alpha1/namespaces/${SYSTEM}/dataplaneproxies`,
    {
      apiVersion: 'gateway.portico.io/v1alpha1',
      kind: 'DataPlaneProxy',
      metadata: { name: 'bench-trace', namespace: SYSTEM },
      spec: { kubernetes: { container: { env: [{ name: 'PORTICO_TRACE_EVENTS', value: TRACE_FILE }] } } },
    },
  );
  if (reply.status !== 201) throw new Error(`creating the DataPlaneProxy: HTTP ${reply.status}`);
  return { namespace: SYSTEM, name: 'bench-trace' };
}

/** The trace lines since `since` (epoch ms) of every pod matching `selector`, each pod's pids kept apart. */
function podTraces(cluster: Cluster, selector: string, container: string, since: number): TraceEvent[] {
  const pods = cluster
    .kubectl(['get', 'pods', '-n', SYSTEM, '-l', selector, '-o', 'jsonpath={.items[*].metadata.name}'])
    .split(' ')
    .filter((p) => p !== '');
  const read = `const l=require('node:fs').readFileSync('${TRACE_FILE}','utf8').split('\\n');process.stdout.write(l.filter((x)=>Number(x.split(' ')[0])>=${since}).join('\\n'))`;
  return pods.flatMap((pod) =>
    parseTrace(
      cluster.kubectl(['exec', '-n', SYSTEM, pod, '-c', container, '--', 'node', '-e', read]),
      `${pod}:`,
    ),
  );
}

/** Where the edits since `since` went: the bench's `marks` with the controller's and the proxies' lines. */
function editStages(cluster: Cluster, since: number, marks: TraceEvent[]): string {
  const events = [
    ...marks,
    ...podTraces(cluster, 'app.kubernetes.io/component=controller', 'controller', since),
    ...podTraces(cluster, 'app.kubernetes.io/name=portico-proxy', 'proxy', since),
  ].sort((a, b) => a.t - b.t);
  const patched = events.filter((e) => e.stage === 'bench-patched');
  const sent = events.filter((e) => e.stage === 'bench-edit');
  const answered = patched.map((e, i) => e.t - (sent[i]?.t ?? e.t));
  return [
    stageTable(events, CLUSTER_STAGES),
    `  (beside: the PATCH itself was answered after ${meanOf(answered).toFixed(2)} ms on average; ${workerSwaps(events, sent)})`,
  ].join('\n');
}

const meanOf = (v: number[]) => v.reduce((a, b) => a + b, 0) / Math.max(1, v.length);

/**
 * Each edit's swaps on every worker: from the first worker's to the last's, and the first 200 against the last
 * swap (negative: a worker that had swapped answered before the other had).
 */
function workerSwaps(events: TraceEvent[], edits: TraceEvent[]): string {
  const spread: number[] = [];
  const lastTo200: number[] = [];
  for (const [i, edit] of edits.entries()) {
    const end = edits[i + 1]?.t ?? Number.POSITIVE_INFINITY;
    const swaps = events.filter((e) => e.stage === 'proxy-swapped' && e.t > edit.t && e.t < end);
    const served = events.find((e) => e.stage === 'bench-200' && e.t > edit.t && e.t < end);
    if (swaps.length < 2 || served === undefined) continue;
    spread.push(swaps.at(-1)!.t - swaps[0]!.t);
    lastTo200.push(served.t - swaps.at(-1)!.t);
  }
  return `workers swapped within ${meanOf(spread).toFixed(2)} ms of each other, the first 200 came ${meanOf(lastTo200).toFixed(2)} ms after the last swap, on average`;
}

const ms = (n: number) => `${n.toFixed(1)} ms`;
const seconds = (n: number) => `${(n / 1000).toFixed(1)} s`;
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
/** The machine's 1-minute load average: other work on the same 2 vCPUs moves every figure. */
const load = () => loadavg()[0]!.toFixed(1);

/** One size's figures: one row of the results, one of the diagnostics. */
async function measureSize(
  cluster: Cluster,
  address: string,
  statuses: { until(n: number): Promise<number> },
  made: number,
  size: number,
): Promise<{ row: string; diagnostics: string; stages?: string }> {
  const { first, last, lastRoute } = await createRoutes(cluster, made, size);
  const servedLast = await servedAt(address, `r-${lastRoute}.bench.test`);
  const loadServed = load();
  await checkAllServed(address, made, size);
  const allAccepted = await Promise.race([
    statuses.until(size),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`not all ${size} routes Accepted within 20 min`)), 1_200_000).unref(),
    ),
  ]);
  const beforeEdits = await controllerSample(cluster);
  const editsFrom = performance.timeOrigin + performance.now();
  const propagation = await editPropagation(cluster, address, size);
  const edits = propagation.times.sort((a, b) => a - b);
  const gaps = propagation.pollGaps;
  const stages = STAGES ? editStages(cluster, editsFrom, propagation.marks) : undefined;
  const loadEdits = load();
  const afterEdits = await controllerSample(cluster);
  const floors: number[] = [];
  for (let k = 0; k < 20; k++) {
    const t = performance.now();
    await get(address, PORT, 'r-0.bench.test').catch(() => undefined);
    floors.push(performance.now() - t);
  }
  const before = await controllerSample(cluster);
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const after = await controllerSample(cluster);
  const idleCores = (after.cpuSeconds - before.cpuSeconds) / (IDLE_MS / 1000);
  const mean = edits.reduce((a, b) => a + b, 0) / edits.length;
  const passes = afterEdits.passes - beforeEdits.passes;
  const translateMs = ((afterEdits.translateSeconds - beforeEdits.translateSeconds) * 1000) / passes;
  const edited = afterEdits.statusWrites - beforeEdits.statusWrites;
  const full = afterEdits.fullTranslations - beforeEdits.fullTranslations;
  return {
    row: `| ${size} | ${seconds(last - first)} | ${seconds(servedLast - last)} | ${seconds(allAccepted - first)} | ${ms(mean)} / ${ms(percentile(edits, 0.99))} | ${ms(median(floors))} | ${(after.resident / 1024 / 1024).toFixed(0)} MiB (heap ${(after.heap / 1024 / 1024).toFixed(0)}) / ${idleCores.toFixed(3)} core | ${loadServed} / ${loadEdits} |`,
    diagnostics: `| ${size} | ${(passes / EDITS).toFixed(1)} | ${Number.isNaN(full) ? '–' : (full / EDITS).toFixed(2)} | ${ms(translateMs)} | ${(edited / EDITS).toFixed(1)} | ${ms(edits[0]!)} / ${ms(median(edits))} | ${gaps.length === 0 ? '–' : ms(gaps.reduce((a, b) => a + b, 0) / gaps.length)} |`,
    ...(stages === undefined ? {} : { stages: `${size} routes: ${stages}` }),
  };
}

const cluster = await startCluster({ log: (line) => console.error(`cluster: ${line}`) });
// Interrupted (Ctrl-C, a timeout's TERM): the cluster is stopped and its host changes undone, as at the end.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping the cluster`);
    void cluster.stop().finally(() => process.exit(130));
  });
}
try {
  await install(cluster);
  await echoNamespace(cluster, NS);
  const parameters = STAGES ? await traceEverywhere(cluster) : undefined;
  await gatewayClass(cluster, 'portico', 'gateway.portico.io/gatewayclass-controller', parameters);
  await gateway(cluster, NS, 'eg', 'portico', [{ name: 'http', port: PORT }]);
  const address = await programmedAddress(cluster, NS, 'eg', 180_000);
  const statuses = await acceptedRoutes(cluster);
  const rows: string[] = [];
  const diagnostics: string[] = [];
  const stageTables: string[] = [];
  let made = 0;
  for (const size of SIZES) {
    const measured = await measureSize(cluster, address, statuses, made, size);
    made = size;
    rows.push(measured.row);
    diagnostics.push(measured.diagnostics);
    if (measured.stages !== undefined) stageTables.push(measured.stages);
    console.error(`size ${size}: ${measured.row}`);
  }
  statuses.close();
  console.log(
    `one edit: mean and p99 over ${EDITS} edits (p99 of ${EDITS} is their maximum); ${IN_FLIGHT} creates in flight; load: the 1-minute load average when the last route was served / after the edits (2 vCPUs)`,
  );
  console.log(
    '| routes | created in | last route served after the last create | all Accepted after the first create | one edit: mean / p99 | floor: a request | controller memory / idle CPU | load |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  console.log(
    `targets at 5,000 routes: one edit <= 30 ms mean; last route served <= 5 s after the last create; controller <= 300 MiB and <= 0.1 core idle (kgateway publishes 0.10 core / 511 MiB at 5,000). Peers, one route's propagation: ${PEERS}`,
  );
  console.log('\nWhere an edit went (controller /metrics over the edits):');
  console.log(
    '| routes | passes per edit | full translations per edit | translation per pass | status writes per edit | edit: min / median | poll period before the first 200 |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const row of diagnostics) console.log(row);
  for (const table of stageTables) console.log(`\nWhere an edit went, ${table}`);
} catch (error) {
  // What the controller and the proxy said, and whether a pod restarted: the figures alone do not say why.
  console.error(cluster.kubectl(['get', 'pods', '-A', '-o', 'wide']));
  console.error(namespaceLogs(cluster, SYSTEM));
  throw error;
} finally {
  await cluster.stop();
}

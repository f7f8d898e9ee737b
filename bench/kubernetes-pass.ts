// In-process cost of one edit through the Kubernetes provider's pass at N routes, stage by stage, without a
// cluster: the runner with the provider's status sink (its writer does nothing), one Gateway, N HTTPRoutes, and
// each edit one route replaced at its index, as the informer snapshot delivers it. Wall time of each stage from
// the runner's trace marks: translated (the critical path of an edit), statuses (stamping, after publishing) and
// the sink's show; and a pass with the same lists, as a proxy's Ack starts. Run: node --import tsx bench/kubernetes-pass.ts [--routes 5000] [--edits 100]
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { HTTPRoute } from '../src/api/http-route.js';
import type { ApiObject } from '../src/api/kinds.js';
import { buildSnapshot, type ResourceSnapshot } from '../src/api/snapshot.js';
import { validateObject } from '../src/api/validate.js';
import { apiStatusSink } from '../src/provider/kubernetes/status-sink.js';
import { createRunner } from '../src/runner/runner.js';

const { values } = parseArgs({
  options: { routes: { type: 'string', default: '5000' }, edits: { type: 'string', default: '100' } },
});
const ROUTES = Number(values.routes);
const EDITS = Number(values.edits);
const NS = 'bench-routes';
const GATEWAY_API = 'gateway.networking.k8s.io/v1';

function valid(raw: unknown): ApiObject {
  const r = validateObject(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.object;
}

const base = [
  valid({
    apiVersion: GATEWAY_API,
    kind: 'GatewayClass',
    metadata: { name: 'portico', generation: 1 },
    spec: { controllerName: 'gateway.portico.io/gatewayclass-controller' },
  }),
  valid({
    apiVersion: GATEWAY_API,
    kind: 'Gateway',
    metadata: { name: 'eg', namespace: NS, generation: 1 },
    spec: { gatewayClassName: 'portico', listeners: [{ name: 'http', protocol: 'HTTP', port: 8080 }] },
  }),
  valid({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'echo', namespace: NS },
    spec: { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] },
  }),
  valid({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'echo-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'echo' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: true } }],
  }),
];

function route(i: number, host: string, generation = 1): HTTPRoute {
  const object = valid({
    apiVersion: GATEWAY_API,
    kind: 'HTTPRoute',
    metadata: { name: `r-${i}`, namespace: NS, generation, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: {
      parentRefs: [{ name: 'eg' }],
      hostnames: [host],
      rules: [{ backendRefs: [{ name: 'echo', port: 8080 }] }],
    },
  });
  if (object.kind !== 'HTTPRoute') throw new Error('not an HTTPRoute');
  return object;
}

let snapshot: ResourceSnapshot = buildSnapshot([
  ...base,
  ...Array.from({ length: ROUTES }, (_, i) => route(i, `r-${i}.bench.test`)),
]);
const marks = new Map<string, number>();
let started = 0;
const sink = apiStatusSink({ raw: () => undefined }, { write: async () => {} }, () => true);
const runner = createRunner({
  translate: {
    controllerName: 'gateway.portico.io/gatewayclass-controller',
    controllerNamespace: 'portico-gateway-system',
    deployType: 'ControllerNamespace',
  },
  source: { snapshot: () => snapshot, dataPlane: () => ({ fleets: {} }) },
  discovery: { setFleet() {}, removeFleet() {}, nodes: () => [] },
  infra: { apply: async () => ({}) },
  statuses: {
    shown: sink.shown,
    show(statuses) {
      const t = performance.now();
      sink.show(statuses);
      marks.set('sink show', performance.now() - t);
    },
  },
  onError: (error) => {
    throw error;
  },
  trace: (stage) => marks.set(stage, performance.now() - started),
});

await runner.now();
await sink.idle();
const samples = new Map<string, number[]>();
for (let k = 0; k < EDITS; k++) {
  const i = (k * 7919) % ROUTES;
  const httpRoutes = snapshot.httpRoutes.slice();
  httpRoutes[i] = route(i, `edit-${k}.bench.test`, 2 + k);
  snapshot = { ...snapshot, httpRoutes };
  started = performance.now();
  await runner.now();
  marks.set('pass', performance.now() - started);
  for (const [stage, ms] of marks) samples.set(stage, [...(samples.get(stage) ?? []), ms]);
  await sink.idle();
}
// A pass nothing in the snapshot started (a proxy's Ack): the same lists again.
const unchanged: number[] = [];
for (let k = 0; k < EDITS; k++) {
  snapshot = { ...snapshot };
  started = performance.now();
  await runner.now();
  unchanged.push(marks.get('translated')!);
}
runner.stop();
sink.stop();

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
console.log(
  `one route edited among ${ROUTES}, ${EDITS} edits, median wall ms since the pass began (load ${loadavg()[0]!.toFixed(1)})`,
);
for (const stage of ['translated', 'discovery-sent', 'statuses', 'pass']) {
  console.log(`  ${stage.padEnd(15)} ${median(samples.get(stage)!).toFixed(2).padStart(8)}`);
}
console.log(
  `  ${'sink show'.padEnd(15)} ${median(samples.get('sink show')!).toFixed(2).padStart(8)} (its own time)`,
);
console.log(`  an Ack's pass (the same lists): translated ${median(unchanged).toFixed(2)}`);

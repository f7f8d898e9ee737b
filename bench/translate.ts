// Benchmark: 5,000 HTTPRoutes across 500 Gateways. Prints the full translation time and, next to it, the
// time to re-translate after one route edit with the memo cache (and without it, as the peer).
import { performance } from 'node:perf_hooks';
import type { ApiObject } from '../src/api/kinds.js';
import { buildSnapshot } from '../src/api/snapshot.js';
import { validateObject } from '../src/api/validate.js';
import { createTranslateCache, type TranslateOptions, translate } from '../src/translate/index.js';
import { median } from './load.js';

const GATEWAYS = 500;
const ROUTES_PER_GATEWAY = 10;
const SERVICES = 1000;

function valid(raw: unknown): ApiObject {
  const r = validateObject(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.object;
}

function route(g: number, i: number, prefix: string): ApiObject {
  const ns = `ns-${g % 50}`;
  return valid({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: {
      name: `route-${g}-${i}`,
      namespace: ns,
      creationTimestamp: `2025-01-01T00:00:${String(i % 60).padStart(2, '0')}Z`,
    },
    spec: {
      parentRefs: [{ name: `gw-${g}`, namespace: ns }],
      hostnames: [`app-${i}.gw-${g}.example.com`],
      rules: [
        {
          matches: [
            { path: { type: 'PathPrefix', value: `${prefix}/${i}` } },
            { path: { type: 'Exact', value: `/exact/${i}` } },
          ],
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: { set: [{ name: 'X-Route', value: `${i}` }] },
            },
          ],
          backendRefs: [
            { name: `svc-${(g * ROUTES_PER_GATEWAY + i) % SERVICES}`, port: 80, weight: 90 },
            { name: `svc-${(g * ROUTES_PER_GATEWAY + i + 1) % SERVICES}`, port: 80, weight: 10 },
          ],
        },
        {
          matches: [
            { path: { type: 'PathPrefix', value: '/' }, headers: [{ name: 'x-canary', value: 'yes' }] },
          ],
          backendRefs: [{ name: `svc-${i}`, port: 80 }],
        },
      ],
    },
  });
}

function world(): ApiObject[] {
  const objects: ApiObject[] = [
    valid({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: 'eg' },
      spec: { controllerName: 'gateway.portico.io/gatewayclass-controller' },
    }),
  ];
  for (let g = 0; g < GATEWAYS; g++) {
    const ns = `ns-${g % 50}`;
    objects.push(
      valid({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name: `gw-${g}`, namespace: ns },
        spec: {
          gatewayClassName: 'eg',
          listeners: [
            { name: 'http', protocol: 'HTTP', port: 80, hostname: `*.gw-${g}.example.com` },
            { name: 'alt', protocol: 'HTTP', port: 8080 },
          ],
        },
      }),
    );
    for (let i = 0; i < ROUTES_PER_GATEWAY; i++) objects.push(route(g, i, '/api'));
  }
  // Every Service a route names exists in the route's namespace; one in seven has no EndpointSlice.
  const services = new Set<string>();
  for (const o of objects) {
    if (o.kind !== 'HTTPRoute') continue;
    for (const rule of o.spec.rules)
      for (const b of rule.backendRefs) services.add(`${o.metadata.namespace}/${b.name}`);
  }
  for (const key of [...services].sort()) {
    const [ns, name] = key.split('/') as [string, string];
    objects.push(
      valid({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: ns },
        spec: { ports: [{ name: 'http', port: 80 }] },
      }),
    );
    const n = Number(name.slice(4));
    if (n % 7 === 0) continue;
    objects.push(
      valid({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${name}-x`, namespace: ns, labels: { 'kubernetes.io/service-name': name } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080 }],
        endpoints: [
          { addresses: [`10.${n % 250}.${ns.slice(3)}.1`] },
          { addresses: [`10.${n % 250}.${ns.slice(3)}.2`] },
        ],
      }),
    );
  }
  return objects;
}

const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'ControllerNamespace',
};

function time<T>(fn: () => T): { ms: number; value: T } {
  const start = performance.now();
  const value = fn();
  return { ms: performance.now() - start, value };
}

const objects = world();
const routes = objects.filter((o) => o.kind === 'HTTPRoute').length;
const gateways = objects.filter((o) => o.kind === 'Gateway').length;
console.log(`input: ${gateways} Gateways, ${routes} HTTPRoutes, ${objects.length} objects in all`);

const RUNS = 7;
const snapshot = buildSnapshot(objects);
const cold = time(() => translate(snapshot, options));
const fullRuns: number[] = [];
for (let k = 0; k < RUNS; k++) fullRuns.push(time(() => translate(snapshot, options)).ms);
console.log(
  `full translation, first call:             ${cold.ms.toFixed(1)} ms (${cold.value.fleets.length} fleets)`,
);
console.log(
  `full translation, median of ${RUNS}:           ${median(fullRuns).toFixed(1)} ms   (target < 1000 ms)`,
);

// One route edit: a new object for that route; every other object, and every other kind's list, keeps its
// identity (as the provider does). Alternating A → B → A … makes every run a one-route edit.
const editedRoutes = snapshot.httpRoutes.map((r) =>
  r.metadata.name === 'route-123-4' && r.metadata.namespace === 'ns-23'
    ? (route(123, 4, '/v2') as typeof r)
    : r,
);
const edited = { ...snapshot, httpRoutes: editedRoutes };
const translationOf = ({ fleets, statuses, infra }: ReturnType<typeof translate>) => ({
  fleets,
  statuses,
  infra,
});
const cache = createTranslateCache();
let previous = translate(snapshot, { ...options, cache });
const incrementalRuns: number[] = [];
const uncachedRuns: number[] = [];
let rebuilt: string[] = [];
for (let k = 0; k < RUNS; k++) {
  const next = k % 2 === 0 ? edited : snapshot;
  const r = time(() => translate(next, { ...options, cache }));
  incrementalRuns.push(r.ms);
  rebuilt = r.value.fleets.filter((f, i) => f !== previous.fleets[i]).map((f) => f.fleet);
  previous = r.value;
  const u = time(() => translate(next, options));
  uncachedRuns.push(u.ms);
  // The translation itself must be the same; a cached run also hands back hints of what changed (fleetChanges).
  if (JSON.stringify(translationOf(u.value)) !== JSON.stringify(translationOf(r.value)))
    throw new Error('cached result differs from uncached');
}
console.log(
  `re-translation after one route edit:      ${median(incrementalRuns).toFixed(1)} ms median with cache (fleets rebuilt: ${rebuilt.join(', ')})`,
);
console.log(`  peer, same edit without cache:           ${median(uncachedRuns).toFixed(1)} ms median`);

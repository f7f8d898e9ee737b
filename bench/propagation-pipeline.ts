// In-process cost of one route-add edit through the standalone pipeline at N routes, stage by stage, without
// processes, sockets or timers: store.apply (parse) → snapshot → translate → discovery diff → proxy side
// (assemble, validate, compile). CPU-bound, so it is a steadier figure than bench:propagation on a busy machine.
// Run: node --import tsx bench/propagation-pipeline.ts [--routes 1000] [--edits 200]
import { parseArgs } from 'node:util';
import { buildSnapshot, type ResourceSnapshot } from '../src/api/snapshot.js';
import {
  assembleFleetConfig,
  parseResource,
  type ReceivedResource,
  resourceKey,
  type ServedResourceSet,
  updateResourceSet,
} from '../src/discovery/resources.js';
import type { FleetConfig, VirtualHost } from '../src/ir/fleet-config.js';
import { patchFleetConfig } from '../src/ir/fleet-config-patch.js';
import { validateFleetConfig } from '../src/ir/validate.js';
import { openResourceStore } from '../src/provider/standalone/resource-store.js';
import { reuseUnchangedLists } from '../src/provider/standalone/snapshot-reuse.js';
import type { CompiledVirtualHost } from '../src/proxy/routing/route-table.js';
import { compileSnapshot } from '../src/proxy/routing/snapshot.js';
import { createTranslateCache, translate } from '../src/translate/index.js';
import { median } from './load.js';
import { baseYaml, routeYaml } from './propagation-fixtures.js';

const { values } = parseArgs({
  options: { routes: { type: 'string', default: '1000' }, edits: { type: 'string', default: '200' } },
});
const ROUTES = Number(values.routes);
const EDITS = Number(values.edits);

const base = baseYaml(3000);

const store = await openResourceStore({ now: () => new Date('2026-01-01T00:00:00Z') });
const initial = new Map([['/r/base.yaml', base]]);
for (let i = 0; i < ROUTES; i++) initial.set(`/r/route-${i}.yaml`, routeYaml(`route-${i}`));
store.apply({ changed: initial, removed: [] });
const cache = createTranslateCache();
const options = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'ControllerNamespace' as const,
  cache,
};
let previousSnapshot: ResourceSnapshot | undefined;
const serverSet: ServedResourceSet = new Map();
let lastFleet: FleetConfig | undefined;
let applied = new Map<string, ReceivedResource>();
let appliedConfig: FleetConfig | undefined;
const compiled = new WeakMap<VirtualHost, CompiledVirtualHost>();

const STAGES = ['parse', 'snapshot', 'translate', 'diff', 'assemble', 'validate', 'compile'] as const;
const totals = new Map<string, number[]>(STAGES.map((s) => [s, []]));

// CPU time, not wall time: the machine is shared, and other processes' load must not count.
function now(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function edit(file: string, text: string, record: boolean): void {
  const t: number[] = [now()];
  store.apply({ changed: new Map([[file, text]]), removed: [] });
  t.push(now());
  const snapshot = reuseUnchangedLists(previousSnapshot, buildSnapshot(store.objects()));
  previousSnapshot = snapshot;
  t.push(now());
  const result = translate(snapshot, options);
  t.push(now());
  const fleet = result.fleets[0] as FleetConfig;
  const delta = updateResourceSet(serverSet, fleet, lastFleet);
  lastFleet = fleet;
  const wire = delta.changed.map((r) => ({ type: r.type, name: r.name, body: Buffer.from(r.json) }));
  t.push(now());
  const candidate = new Map(applied);
  const received: ReceivedResource[] = [];
  for (const r of wire) {
    const parsed = parseResource(r.type, r.name, r.body);
    candidate.set(resourceKey(r.type, r.name), parsed);
    received.push(parsed);
  }
  for (const r of delta.removed) candidate.delete(resourceKey(r.type, r.name));
  const config =
    appliedConfig === undefined
      ? assembleFleetConfig(fleet.fleet, candidate.values())
      : patchFleetConfig(appliedConfig, received, delta.removed);
  appliedConfig = config;
  t.push(now());
  const valid = validateFleetConfig(config);
  t.push(now());
  compileSnapshot(valid, '1', compiled);
  t.push(now());
  applied = candidate;
  if (record) for (const [i, s] of STAGES.entries()) totals.get(s)!.push(t[i + 1]! - t[i]!);
}

edit('/r/base.yaml', base, false);
for (let i = 0; i < 20; i++) edit(`/r/warm-${i}.yaml`, routeYaml(`warm-${i}`), false);
for (let i = 0; i < EDITS; i++) edit(`/r/added-${i}.yaml`, routeYaml(`added-${i}`), true);

const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
console.log(`one route added to ${ROUTES}+ routes, ${EDITS} edits, in-process (CPU ms)`);
let sum = 0;
for (const s of STAGES) {
  const v = totals.get(s)!;
  sum += mean(v);
  console.log(
    `  ${s.padEnd(10)} median ${median(v).toFixed(3).padStart(7)}  mean ${mean(v).toFixed(3).padStart(7)}`,
  );
}
console.log(`  ${'total'.padEnd(10)} mean ${sum.toFixed(3).padStart(7)}`);

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot, type ResourceSnapshot } from '../../src/api/snapshot.js';
import type { FleetConfig } from '../../src/ir/fleet-config.js';
import {
  createRunner,
  type InfraOutcome,
  type RunnerOptions,
  type StatusSink,
} from '../../src/runner/runner.js';
import type { StampedStatus } from '../../src/runner/status-stamps.js';
import type { DataPlaneState, ObjectStatus } from '../../src/translate/index.js';
import { withTestCertificates } from '../translate/testdata-certificates.js';

function load(name: string): ResourceSnapshot {
  const url = new URL(`../translate/testdata/${name}`, import.meta.url);
  const text = withTestCertificates(readFileSync(url, 'utf8'));
  return buildSnapshot(parseYamlFile(name, text).objects.map((o) => o.object));
}

/** The route `solo` with another hostname: only its fleet changes. */
function editSolo(snapshot: ResourceSnapshot): ResourceSnapshot {
  return {
    ...snapshot,
    httpRoutes: snapshot.httpRoutes.map((r) =>
      r.metadata.name === 'solo' ? { ...r, spec: { ...r.spec, hostnames: ['solo.example.com'] } } : r,
    ),
  };
}

interface Harness {
  options: RunnerOptions;
  snapshot: ResourceSnapshot;
  published: string[];
  removed: string[];
  shown: (readonly StampedStatus[])[];
  infraCalls: number;
  errors: { error: unknown; retryInMs: number }[];
  infraOutcome: () => Promise<InfraOutcome>;
}

function harness(statuses?: Partial<StatusSink>): Harness {
  const h: Harness = {
    snapshot: load('merged.in.yaml'),
    published: [],
    removed: [],
    shown: [],
    infraCalls: 0,
    errors: [],
    infraOutcome: async () => ({}),
    options: undefined as unknown as RunnerOptions,
  };
  h.options = {
    translate: {
      controllerName: 'gateway.portico.io/gatewayclass-controller',
      controllerNamespace: 'portico-gateway-system',
      deployType: 'ControllerNamespace',
    },
    source: {
      snapshot: () => h.snapshot,
      dataPlane: (fleets: readonly FleetConfig[]): DataPlaneState => ({
        fleets: Object.fromEntries(
          fleets.map((f) => [f.fleet, { addresses: [], appliedGateways: {}, listenerErrors: [] }]),
        ),
      }),
    },
    discovery: {
      setFleet: (config) => h.published.push(config.fleet),
      removeFleet: (fleet) => h.removed.push(fleet),
      nodes: () => [],
    },
    infra: {
      apply: () => {
        h.infraCalls++;
        return h.infraOutcome();
      },
    },
    statuses: { show: (s) => void h.shown.push(s), ...statuses },
    timings: { retryFirstMs: 10, retryMaxMs: 20 },
    onError: (error, retryInMs) => h.errors.push({ error, retryInMs }),
  };
  return h;
}

const conditionsOf = (s: ObjectStatus | undefined) =>
  (s?.status.conditions ?? []) as {
    type: string;
    status: string;
    reason: string;
    message: string;
    lastTransitionTime?: string;
  }[];

test('an unchanged fleet is not published again; an edited one is, a vanished one is removed', async () => {
  const h = harness();
  const runner = createRunner(h.options);
  await runner.now();
  assert.deepEqual(h.published.sort(), ['default/solo', 'merged-eg']);
  assert.equal(runner.ready(), true);
  h.published.length = 0;
  await runner.now();
  assert.deepEqual(h.published, []);
  h.snapshot = editSolo(h.snapshot);
  await runner.now();
  assert.deepEqual(h.published, ['default/solo']);
  h.snapshot = { ...h.snapshot, gateways: h.snapshot.gateways.filter((g) => g.metadata.name !== 'solo') };
  await runner.now();
  assert.deepEqual(h.removed, ['default/solo']);
  assert.deepEqual(
    runner.fleets().map((f) => f.fleet),
    ['merged-eg'],
  );
  runner.stop();
});

test('condition times are stamped once: an unchanged status keeps its stamped object and its times', async () => {
  const h = harness();
  const runner = createRunner(h.options);
  await runner.now();
  const first = runner.statuses().get('Gateway default/solo');
  const stamped = conditionsOf(first);
  assert.ok(stamped.length > 0 && stamped.every((c) => typeof c.lastTransitionTime === 'string'));
  await sleep(5);
  await runner.now();
  assert.equal(runner.statuses().get('Gateway default/solo'), first);
  // Every status the sink got carries times, and the second pass handed it the very same stamped objects.
  const [pass1, pass2] = h.shown;
  assert.ok(pass1 !== undefined && pass1.length === pass2?.length);
  assert.ok(pass2.every((s, i) => s.stamped === pass1[i]?.stamped));
  runner.stop();
});

test("a sink's own view of an object is what times carry over from, and a new view is stamped again", async () => {
  const long = '2020-01-01T00:00:00.000Z';
  const views = new Map<string, { status: unknown }>();
  const h = harness({ shown: (s) => views.get(`${s.kind} ${s.namespace}/${s.name}`) });
  const runner = createRunner(h.options);
  await runner.now();
  const solo = h.shown[0]!.find((s) => s.translated.kind === 'Gateway' && s.translated.name === 'solo')!;
  assert.equal(solo.shown, undefined);
  // The object now shows those conditions since long ago (another replica wrote them): the times stay.
  const conditions = conditionsOf(solo.stamped).map((c) => ({ ...c, lastTransitionTime: long }));
  views.set('Gateway default/solo', { status: { ...solo.stamped.status, conditions } });
  await runner.now();
  const again = h.shown[1]!.find((s) => s.translated.kind === 'Gateway' && s.translated.name === 'solo')!;
  assert.equal(again.shown, views.get('Gateway default/solo'));
  assert.ok(conditionsOf(again.stamped).every((c) => c.lastTransitionTime === long));
  runner.stop();
});

test('a failing infrastructure sink is retried with backoff until it succeeds; statuses wait for it', async () => {
  const h = harness();
  let failures = 3;
  h.infraOutcome = async () => {
    if (failures-- > 0) throw new Error('apply refused');
    return {};
  };
  const runner = createRunner(h.options);
  await runner.now();
  assert.equal(h.shown.length, 0);
  assert.equal(runner.ready(), false);
  for (let waited = 0; h.shown.length === 0; waited += 5) {
    assert.ok(waited < 3000, 'no retry succeeded');
    await sleep(5);
  }
  assert.deepEqual(
    h.errors.map((e) => [(e.error as Error).message, e.retryInMs]),
    [
      ['apply refused', 10],
      ['apply refused', 20],
      ['apply refused', 20],
    ],
  );
  assert.equal(h.infraCalls, 4);
  assert.equal(runner.ready(), true);
  runner.stop();
});

test('infrastructure that could not be created makes its Gateways not Programmed, with the reason', async () => {
  const h = harness();
  h.infraOutcome = async () => ({
    problems: new Map([['default/solo', { reason: 'Forbidden', message: 'exceeded quota: no-services' }]]),
  });
  const runner = createRunner(h.options);
  await runner.now();
  const programmed = (name: string) =>
    conditionsOf(runner.statuses().get(`Gateway ${name}`)).find((c) => c.type === 'Programmed');
  const solo = programmed('default/solo');
  assert.deepEqual(
    [solo?.status, solo?.reason, solo?.message],
    ['False', 'Forbidden', 'exceeded quota: no-services'],
  );
  assert.notEqual(programmed('team-a/first')?.reason, 'Forbidden');
  runner.stop();
});

test('while infrastructure is not ours to apply, only discovery is fed; a learnt fact runs the pass again', async () => {
  const h = harness();
  let leading = false;
  let learn = true;
  h.infraOutcome = async () => {
    const learnt = learn;
    learn = false;
    return { learnt };
  };
  const runner = createRunner({ ...h.options, applies: () => leading });
  await runner.now();
  assert.equal(runner.ready(), true);
  assert.deepEqual([h.infraCalls, h.shown.length], [0, 0]);
  assert.equal(h.published.length, 2);
  leading = true;
  await runner.now();
  assert.deepEqual([h.infraCalls, h.shown.length], [2, 2]);
  runner.stop();
});

test('a pass that began before this replica applied writes nothing: its data plane was read without the lease', async () => {
  const h = harness();
  let leading = false;
  const reads: boolean[] = [];
  const dataPlane = h.options.source.dataPlane;
  // The lease is taken while the pass runs: after it read the data plane, before it would write.
  h.options.source.dataPlane = (fleets, snapshot) => {
    reads.push(leading);
    leading = true;
    return dataPlane(fleets, snapshot);
  };
  const runner = createRunner({ ...h.options, applies: () => leading });
  await runner.now();
  assert.deepEqual([h.infraCalls, h.shown.length], [0, 0], 'nothing from the pass that read it as a standby');
  await runner.now();
  assert.deepEqual(reads, [false, true]);
  assert.deepEqual([h.infraCalls, h.shown.length], [1, 1], 'the next pass, read as the leader, writes');
  runner.stop();
});

test('a translation that says which statuses changed is stamped and shown by those alone, unless the sink wants all', async () => {
  const changed: string[][] = [];
  let wantsAll = false;
  const h = harness({
    showChanged: (statuses) =>
      void changed.push(statuses.map((s) => `${s.translated.kind} ${s.translated.name}`)),
    wantsAll: () => wantsAll,
  });
  const runner = createRunner(h.options);
  await runner.now();
  assert.equal(h.shown.length, 1, 'the first pass shows everything');
  // The route edit as a watch's snapshot gives it: with how the route list came from the last.
  const edit = (from: ResourceSnapshot): ResourceSnapshot => {
    const to = editSolo(from);
    const before = from.httpRoutes.find((r) => r.metadata.name === 'solo')!;
    const after = to.httpRoutes.find((r) => r.metadata.name === 'solo')!;
    const step = { from: from.httpRoutes, to: to.httpRoutes, removed: [before], added: [after] };
    return { ...to, routeChanges: { httpRoutes: [step], grpcRoutes: [] } };
  };
  h.snapshot = edit(h.snapshot);
  await runner.now();
  assert.equal(h.shown.length, 1, 'not shown everything again');
  assert.equal(changed.length, 1);
  assert.ok(changed[0]!.includes('HTTPRoute solo'));
  assert.ok(
    changed[0]!.every((s) => !s.startsWith('HTTPRoute') || s === 'HTTPRoute solo'),
    changed[0]!.join(', '),
  );
  wantsAll = true;
  h.snapshot = edit({ ...h.snapshot, httpRoutes: h.snapshot.httpRoutes.slice() });
  await runner.now();
  assert.equal(h.shown.length, 2, 'a sink that forgot is shown everything');
  assert.equal(runner.statuses().size, h.shown[1]!.length);
  runner.stop();
});

// Moving a team from a merged Gateway to a ListenerSet (docs/kubernetes.md): once the team's Gateway goes, its
// ListenerSet's listener takes the tuple in the same translation, so the port and the route's VirtualHost stay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { createTranslateCache, type TranslateOptions, translate } from '../../src/translate/index.js';
import { translation } from './random-edits.js';

const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'GatewayNamespace',
};

const WORLD = `
apiVersion: gateway.portico.io/v1alpha1
kind: DataPlaneProxy
metadata: {name: merged, namespace: portico-gateway-system}
spec: {mergeGateways: true}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: shared}
spec:
  controllerName: gateway.portico.io/gatewayclass-controller
  parametersRef: {group: gateway.portico.io, kind: DataPlaneProxy, name: merged, namespace: portico-gateway-system}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: platform, namespace: infra, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  gatewayClassName: shared
  allowedListeners: {namespaces: {from: All}}
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: platform.example.com}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: team, namespace: team-a, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  gatewayClassName: shared
  listeners: [{name: www, protocol: HTTP, port: 8080, hostname: www.example.com}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: team, namespace: team-a, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  parentRef: {name: platform, namespace: infra}
  listeners: [{name: www, protocol: HTTP, port: 8080, hostname: www.example.com}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: www, namespace: team-a}
spec:
  parentRefs: [{name: team}, {kind: ListenerSet, name: team}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: team-a}
spec: {ports: [{port: 80}]}
`;

function parentReasons(result: ReturnType<typeof translate>, kind: string, name: string): string[] {
  const s = result.statuses.find((x) => x.kind === kind && x.name === name)!;
  const parents = (s.status.parents ?? []) as {
    parentRef: { kind: string };
    conditions: { type: string; reason: string }[];
  }[];
  return parents.map((p) => `${p.parentRef.kind}:${p.conditions.find((c) => c.type === 'Accepted')!.reason}`);
}

test("a team's Gateway deleted: its ListenerSet takes the port in the same translation, the route still served", () => {
  const before = buildSnapshot(parseYamlFile('world.yaml', WORLD).objects.map((o) => o.object));
  const cache = createTranslateCache();
  const first = translate(before, { ...options, cache });
  const fleet = (r: typeof first) => r.fleets.find((f) => f.fleet === 'shared')!;
  const hosts = (r: typeof first) => fleet(r).virtualHosts.map((v) => `${v.name}:${v.routes.length}`);
  assert.deepEqual(hosts(first), ['port-80/platform.example.com:0', 'port-8080/www.example.com:1']);
  assert.deepEqual(parentReasons(first, 'HTTPRoute', 'www'), [
    'Gateway:Accepted',
    'ListenerSet:NotAllowedByListeners',
  ]);
  const lsBefore = first.statuses.find((s) => s.kind === 'ListenerSet')!;
  assert.match(JSON.stringify(lsBefore.status), /"reason":"HostnameConflict"/);

  const after = { ...before, gateways: before.gateways.filter((g) => g.metadata.name !== 'team') };
  const second = translate(after, { ...options, cache });
  assert.deepEqual(translation(second), translation(translate(after, options)));
  assert.deepEqual(hosts(second), ['port-80/platform.example.com:0', 'port-8080/www.example.com:1']);
  assert.deepEqual(
    fleet(second).listeners.map((l) => l.port),
    [80, 8080],
  );
  assert.deepEqual(parentReasons(second, 'HTTPRoute', 'www'), ['ListenerSet:Accepted']);
  // The Service keeps the port: nothing about the fleet's workload changes.
  assert.deepEqual(
    second.infra,
    first.infra.map((i) => ({ ...i, gateways: ['infra/platform'] })),
  );
});

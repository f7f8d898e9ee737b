// A Gateway's own DataPlaneProxy laid over its class's, and what happens when one breaks: the fleet keeps the last
// good parameters it had (within one controller's life: the translate cache remembers them), while the object's
// status says why it is not accepted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiObject } from '../../src/api/kinds.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { validateObject } from '../../src/api/validate.js';
import {
  createTranslateCache,
  type TranslateOptions,
  type TranslateResult,
  translate,
} from '../../src/translate/index.js';
import { type DataPlaneProxySpec, layeredProxySpec } from '../../src/translate/proxy-parameters.js';

const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'GatewayNamespace',
};

function valid(raw: unknown): ApiObject {
  const r = validateObject(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.object;
}

function proxy(name: string, namespace: string, spec: unknown): ApiObject {
  return valid({
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'DataPlaneProxy',
    metadata: { name, namespace },
    spec,
  });
}

const gatewayClass = valid({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'GatewayClass',
  metadata: { name: 'eg' },
  spec: {
    controllerName: options.controllerName,
    parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', name: 'class', namespace: 'infra' },
  },
});
const gateway = valid({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'web', namespace: 'team' },
  spec: {
    gatewayClassName: 'eg',
    infrastructure: { parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', name: 'own' } },
    listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }],
  },
});

function run(objects: ApiObject[], cache = createTranslateCache()): TranslateResult {
  return translate(buildSnapshot(objects), { ...options, cache });
}

function accepted(result: TranslateResult, kind: string): Record<string, unknown> | undefined {
  const s = result.statuses.find((x) => x.kind === kind);
  const conditions = (s?.status.conditions ?? []) as Record<string, unknown>[];
  return conditions.find((c) => c.type === 'Accepted');
}

test("layered: objects merge, values and lists are the Gateway's, one-of choices replace the class's", () => {
  const under = {
    mergeGateways: false,
    workers: 2,
    kubernetes: {
      deployment: { replicas: 3, strategy: { type: 'Recreate' } },
      podDisruptionBudget: { minAvailable: 1 },
      pod: { nodeSelector: { pool: 'edge' }, tolerations: [{ key: 'a', operator: 'Exists' }] },
    },
  } as DataPlaneProxySpec;
  const over = {
    mergeGateways: false,
    kubernetes: {
      horizontalPodAutoscaler: { maxReplicas: 5 },
      deployment: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
      podDisruptionBudget: { maxUnavailable: '50%' },
      pod: { nodeSelector: { zone: 'b' }, tolerations: [] },
    },
  } as DataPlaneProxySpec;
  assert.deepEqual(layeredProxySpec(under, over), {
    mergeGateways: false,
    workers: 2,
    kubernetes: {
      deployment: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
      podDisruptionBudget: { maxUnavailable: '50%' },
      pod: { nodeSelector: { pool: 'edge', zone: 'b' }, tolerations: [] },
      horizontalPodAutoscaler: { maxReplicas: 5 },
    },
  });
  const perNode = layeredProxySpec(under, {
    mergeGateways: true,
    kubernetes: { daemonSet: {} },
  } as DataPlaneProxySpec);
  assert.equal(perNode.kubernetes?.deployment, undefined);
  assert.deepEqual(perNode.kubernetes?.daemonSet, {});
  assert.equal(perNode.mergeGateways, false, "a Gateway's mergeGateways is never taken");
  const fixed = layeredProxySpec(
    {
      mergeGateways: false,
      kubernetes: { horizontalPodAutoscaler: { maxReplicas: 4 } },
    } as DataPlaneProxySpec,
    { mergeGateways: false, kubernetes: { deployment: { replicas: 2 } } } as DataPlaneProxySpec,
  );
  assert.deepEqual(fixed.kubernetes, { deployment: { replicas: 2 } });
});

test("a Gateway's DataPlaneProxy that breaks leaves its fleet on the last good parameters, and says why", () => {
  const classProxy = proxy('class', 'infra', { workers: 2, logLevel: 'warn' });
  const cache = createTranslateCache();
  const good = run([gatewayClass, classProxy, gateway, proxy('own', 'team', { logLevel: 'debug' })], cache);
  assert.equal(good.infra[0]?.logLevel, 'debug');
  assert.equal(good.infra[0]?.workers, 2);
  assert.equal(accepted(good, 'Gateway')?.status, 'True');

  const broken = [
    gatewayClass,
    classProxy,
    gateway,
    proxy('own', 'team', { mergeGateways: true, logLevel: 'error' }),
  ];
  const held = run(broken, cache);
  assert.equal(held.infra.length, 1, 'the fleet is still there');
  assert.equal(held.infra[0]?.logLevel, 'debug', 'with its last good log level');
  assert.equal(held.fleets.length, 1, 'and its config is still published');
  const condition = accepted(held, 'Gateway');
  assert.equal(condition?.status, 'False');
  assert.equal(condition?.reason, 'InvalidParameters');
  assert.match(String(condition?.message), /spec\.mergeGateways: .*keeps its last good parameters/);

  // A controller that never saw the good parameters (a new leader) serves the fleet with the class's.
  const fresh = run(broken);
  assert.equal(fresh.infra[0]?.logLevel, 'warn');
  assert.match(String(accepted(fresh, 'Gateway')?.message), /takes the GatewayClass's parameters/);

  // Fixed: the Gateway's own parameters again.
  const fixed = run([gatewayClass, classProxy, gateway, proxy('own', 'team', { logLevel: 'info' })], cache);
  assert.equal(fixed.infra[0]?.logLevel, 'info');
  assert.equal(accepted(fixed, 'Gateway')?.status, 'True');
});

test('a class whose DataPlaneProxy breaks keeps its fleets as they were; a new controller has none', () => {
  const plain = valid({
    ...(gateway as object),
    spec: { ...(gateway as { spec: object }).spec, infrastructure: {} },
  });
  const cache = createTranslateCache();
  const good = run([gatewayClass, proxy('class', 'infra', { workers: 3 }), plain], cache);
  assert.equal(good.infra[0]?.workers, 3);
  const broken = [
    gatewayClass,
    proxy('class', 'infra', { telemetry: { tracing: { endpoint: 'collector:4318' } } }),
    plain,
  ];
  const held = run(broken, cache);
  assert.equal(held.infra[0]?.workers, 3);
  assert.equal(accepted(held, 'GatewayClass')?.status, 'False');
  const gw = accepted(held, 'Gateway');
  assert.equal(gw?.reason, 'InvalidParameters');
  assert.match(
    String(gw?.message),
    /spec\.telemetry\.tracing\.endpoint: .*keep serving with the class's last good/,
  );
  assert.deepEqual(run(broken).infra, [], 'without a last good state, no fleet');
});

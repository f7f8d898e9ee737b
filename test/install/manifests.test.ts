import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseControllerConfig } from '../../src/api/controller-config.js';
import { INFRA_MANAGER, renderInstall } from '../../src/install/manifests.js';
import { applySet, DEFAULT_VALUES } from '../../src/install/values.js';

const set = (...pairs: string[]) => pairs.reduce(applySet, DEFAULT_VALUES);
const find = (m: ReturnType<typeof renderInstall>, kind: string, name: string, ns?: string): unknown =>
  m.find(
    (o) =>
      o.kind === kind &&
      (o.metadata as { name: string }).name === name &&
      (ns === undefined || (o.metadata as { namespace?: string }).namespace === ns),
  );

test('the default install: CRD, controller, Services 18000/18001 and 19001, certgen Job, no infra-manager role', () => {
  const m = renderInstall(DEFAULT_VALUES);
  assert.ok(find(m, 'CustomResourceDefinition', 'dataplaneproxies.gateway.portico.io'));
  const svc = find(m, 'Service', 'portico-gateway') as { spec: { ports: { port: number }[] } };
  assert.deepEqual(
    svc.spec.ports.map((p) => p.port),
    [18000, 18001],
  );
  const metrics = find(m, 'Service', 'portico-gateway-metrics') as { spec: { ports: { port: number }[] } };
  assert.deepEqual(
    metrics.spec.ports.map((p) => p.port),
    [19001],
  );
  assert.ok(find(m, 'Job', 'portico-gateway-certgen'));
  assert.equal(find(m, 'ClusterRole', INFRA_MANAGER), undefined);
  const cm = find(m, 'ConfigMap', 'portico-gateway-config') as { data: Record<string, string> };
  const config = parseControllerConfig('portico.yaml', cm.data['portico.yaml']!);
  assert.equal(config.provider.kubernetes.deploy.type, 'ControllerNamespace');
});

test('Gateway Namespace Mode: the infra-manager cluster role has exactly the DESIGN.md §5 rules', () => {
  const m = renderInstall(set('config.deployType=GatewayNamespace', 'namespace=gw-sys'));
  const role = find(m, 'ClusterRole', INFRA_MANAGER) as {
    rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  };
  const verbs = ['create', 'get', 'delete', 'deletecollection', 'patch'];
  assert.deepEqual(role.rules, [
    { apiGroups: [''], resources: ['serviceaccounts', 'services', 'configmaps'], verbs },
    { apiGroups: ['apps'], resources: ['deployments', 'daemonsets'], verbs },
    {
      apiGroups: ['autoscaling', 'policy'],
      resources: ['horizontalpodautoscalers', 'poddisruptionbudgets'],
      verbs,
    },
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  ]);
  assert.ok(find(m, 'ClusterRoleBinding', INFRA_MANAGER));
});

test('a restricted watch renders namespaced Roles only in the watched namespaces', () => {
  const m = renderInstall(set('config.deployType=GatewayNamespace', 'config.watch.namespaces=a,b'));
  assert.ok(find(m, 'Role', INFRA_MANAGER, 'a'));
  assert.ok(find(m, 'Role', INFRA_MANAGER, 'b'));
  assert.equal(find(m, 'Role', INFRA_MANAGER, 'c'), undefined);
  const cm = find(m, 'ConfigMap', 'portico-gateway-config') as { data: Record<string, string> };
  const config = parseControllerConfig('portico.yaml', cm.data['portico.yaml']!);
  assert.deepEqual(config.provider.kubernetes.watch?.namespaces, ['a', 'b']);
});

test('--set errors name the key', () => {
  assert.throws(() => set('config.deployType=Elsewhere'), /--set config.deployType: must be/);
  assert.throws(() => set('nope=1'), /--set nope: unknown key/);
  assert.throws(() => set('namespace=Bad_Name'), /not a valid namespace name/);
});

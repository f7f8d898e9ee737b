import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderFleetObjects } from '../../../src/infra/kubernetes/render.js';
import type { FleetInfra } from '../../../src/ir/fleet-infra.js';

const INFRA: FleetInfra = {
  fleet: 'team-a/eg',
  name: 'proxy-team-a-eg-77bb22a9',
  namespace: 'team-a',
  labels: {
    'app.kubernetes.io/name': 'portico-proxy',
    'gateway.portico.io/owning-gateway-namespace': 'team-a',
    'gateway.portico.io/owning-gateway-name': 'eg',
  },
  owner: { gateway: 'team-a/eg', uid: 'u-1' },
  propagated: { labels: {}, annotations: {} },
  gateways: ['team-a/eg'],
  ports: [
    { name: 'http-80', port: 80, protocol: 'TCP', containerPort: 10080 },
    { name: 'http-8080', port: 8080, protocol: 'TCP', containerPort: 8080 },
  ],
};

test("mutual TLS mode: the fleet's own client certificate Secret, two non-root containers, LoadBalancer ports", () => {
  const { serviceAccount, deployment, service } = renderFleetObjects(
    { ...INFRA, namespace: 'portico-gateway-system', owner: undefined },
    {
      image: 'portico:dev',
      controllerNamespace: 'portico-gateway-system',
      deployType: 'ControllerNamespace',
    },
  );
  assert.equal(serviceAccount.metadata?.name, INFRA.name);
  assert.equal(deployment.metadata?.ownerReferences, undefined);
  const pod = deployment.spec!.template.spec!;
  assert.deepEqual(
    pod.containers.map((c) => c.name),
    ['proxy', 'shutdown-manager'],
  );
  assert.equal(pod.securityContext?.runAsNonRoot, true);
  // Pod Security Admission `restricted` at pod and container level.
  assert.deepEqual(pod.securityContext?.seccompProfile, { type: 'RuntimeDefault' });
  for (const c of pod.containers) {
    assert.deepEqual(c.securityContext?.seccompProfile, { type: 'RuntimeDefault' }, c.name);
    assert.equal(c.securityContext?.allowPrivilegeEscalation, false, c.name);
    assert.equal(c.securityContext?.readOnlyRootFilesystem, true, c.name);
    assert.deepEqual(c.securityContext?.capabilities?.drop, ['ALL'], c.name);
  }
  // Its own identity, and no other fleet's: the Secret is named after the fleet's infrastructure.
  assert.deepEqual(pod.volumes?.[0]?.secret?.secretName, 'proxy-team-a-eg-77bb22a9-client-cert');
  assert.equal(pod.volumes?.length, 1);
  const proxy = pod.containers[0]!;
  assert.deepEqual(proxy.readinessProbe?.httpGet, { path: '/ready', port: 19003 });
  // Probed every second: a new proxy takes traffic as soon as it is ready, not at the next slow tick.
  assert.equal(proxy.readinessProbe?.periodSeconds, 1);
  // The pod is Ready when the proxy is: the shutdown-manager sidecar serves no traffic and does not gate it.
  assert.equal(pod.containers[1]!.readinessProbe, undefined);
  assert.ok(pod.containers[1]!.livenessProbe !== undefined);
  // Liveness asks the proxy itself whether it still serves (a hung or drained proxy is restarted), and gives
  // up only after longer than a probe's timeout allows a busy event loop.
  assert.deepEqual(proxy.livenessProbe, {
    httpGet: { path: '/live', port: 19003 },
    periodSeconds: 10,
    timeoutSeconds: 2,
    failureThreshold: 3,
  });
  assert.ok(
    proxy.args?.join(' ').includes('--ready-address 0.0.0.0:19003'),
    'kubelet reaches it on the pod IP',
  );
  assert.ok(!proxy.args?.includes('--allow-remote-admin'), 'the admin API stays on loopback in the pod');
  assert.ok(proxy.args?.includes('--cert-file'));
  assert.ok(
    proxy.args
      ?.join(' ')
      .includes('--discovery portico-gateway.portico-gateway-system.svc:18000 --fleet team-a/eg'),
  );
  assert.deepEqual(proxy.lifecycle?.preStop?.exec?.command?.slice(0, 3), [
    'portico',
    'shutdown-manager',
    'drain',
  ]);
  assert.ok(proxy.resources?.requests?.cpu !== undefined);
  assert.equal(service.spec?.type, 'LoadBalancer');
  assert.deepEqual(
    service.spec?.ports?.map((p) => [p.port, p.targetPort]),
    [
      [80, 10080],
      [8080, 8080],
    ],
  );
  assert.deepEqual(service.spec?.selector, deployment.spec?.selector.matchLabels);
});

test('token mode: CA ConfigMap and projected token with the controller audience, owned by the Gateway', () => {
  const { deployment } = renderFleetObjects(INFRA, {
    image: 'portico:dev',
    controllerNamespace: 'portico-gateway-system',
    deployType: 'GatewayNamespace',
  });
  assert.deepEqual(deployment.metadata?.ownerReferences?.[0], {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    name: 'eg',
    uid: 'u-1',
    blockOwnerDeletion: true,
  });
  const volumes = deployment.spec!.template.spec!.volumes!;
  assert.equal(volumes[0]?.configMap?.name, 'portico-ca');
  assert.deepEqual(volumes[1]?.projected?.sources?.[0]?.serviceAccountToken, {
    audience: 'portico-gateway.portico-gateway-system.svc.cluster.local',
    expirationSeconds: 3600,
    path: 'token',
  });
  const args = deployment.spec!.template.spec!.containers[0]!.args!;
  assert.ok(args.includes('--token-file'));
  assert.ok(!args.includes('--cert-file'));
});

test("the Gateway's infrastructure labels and annotations are on every object and pod, never in the selector", () => {
  const infra: FleetInfra = {
    ...INFRA,
    propagated: {
      labels: {
        'cost-center': 'edge',
        'app.kubernetes.io/name': 'not-ours',
        'gateway.networking.k8s.io/gateway-name': 'eg',
      },
      annotations: { owner: 'team-a' },
    },
  };
  const objects = renderFleetObjects(infra, {
    image: 'portico:dev',
    controllerNamespace: 'portico-gateway-system',
    deployType: 'GatewayNamespace',
  });
  const pod = objects.deployment.spec!.template.metadata!;
  for (const meta of [
    objects.serviceAccount.metadata!,
    objects.deployment.metadata!,
    objects.service.metadata!,
    pod,
  ]) {
    assert.equal(meta.labels?.['cost-center'], 'edge');
    assert.equal(meta.labels?.['gateway.networking.k8s.io/gateway-name'], 'eg');
    assert.equal(meta.labels?.['app.kubernetes.io/name'], 'portico-proxy', "Portico's own labels win");
    assert.deepEqual(meta.annotations, { owner: 'team-a' });
  }
  assert.deepEqual(objects.deployment.spec!.selector.matchLabels, INFRA.labels);
  assert.deepEqual(objects.service.spec!.selector, INFRA.labels);
});

test("the class's access log settings reach the proxy container's arguments", () => {
  const { deployment } = renderFleetObjects(
    { ...INFRA, accessLog: { format: 'json', fields: ['status', 'duration_ms'] } },
    { image: 'portico:dev', controllerNamespace: 'portico-gateway-system', deployType: 'GatewayNamespace' },
  );
  const args = deployment.spec!.template.spec!.containers[0]!.args!;
  assert.deepEqual(args.slice(args.indexOf('--access-log')), [
    '--access-log',
    'json',
    '--access-log-fields',
    'status,duration_ms',
  ]);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1DaemonSet, V1Deployment } from '@kubernetes/client-node';
import { fleetObjectList, renderFleetObjects } from '../../../src/infra/kubernetes/render.js';
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
  const {
    serviceAccount,
    workload: deployment,
    service,
  } = renderFleetObjects(
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
  // Liveness starts only once each container first answered: many proxies starting on one busy node are not
  // restarted for being slow to start (each restart would start over, and the node would never settle).
  assert.deepEqual(proxy.startupProbe, {
    httpGet: { path: '/live', port: 19003 },
    periodSeconds: 1,
    failureThreshold: 300,
  });
  assert.deepEqual(pod.containers[1]!.startupProbe?.httpGet, { path: '/healthz', port: 19002 });
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
  const { workload: deployment } = renderFleetObjects(INFRA, {
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
  const pod = objects.workload.spec!.template.metadata!;
  for (const meta of [
    objects.serviceAccount.metadata!,
    objects.workload.metadata!,
    objects.service.metadata!,
    pod,
  ]) {
    assert.equal(meta.labels?.['cost-center'], 'edge');
    assert.equal(meta.labels?.['gateway.networking.k8s.io/gateway-name'], 'eg');
    assert.equal(meta.labels?.['app.kubernetes.io/name'], 'portico-proxy', "Portico's own labels win");
    assert.deepEqual(meta.annotations, { owner: 'team-a' });
  }
  assert.deepEqual(objects.workload.spec!.selector.matchLabels, INFRA.labels);
  assert.deepEqual(objects.service.spec!.selector, INFRA.labels);
});

test("the class's access log settings reach the proxy container's arguments", () => {
  const { workload: deployment } = renderFleetObjects(
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

const GATEWAY_NAMESPACE = {
  image: 'portico:dev',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'GatewayNamespace',
} as const;

test('without a shape: one replica, a LoadBalancer, room for the drain, no autoscaler and no budget', () => {
  const objects = renderFleetObjects(INFRA, GATEWAY_NAMESPACE);
  assert.equal(objects.workload.kind, 'Deployment');
  assert.equal((objects.workload as V1Deployment).spec?.replicas, 1);
  assert.equal(objects.workload.spec?.template.spec?.terminationGracePeriodSeconds, 90);
  assert.equal(objects.service.spec?.type, 'LoadBalancer');
  assert.equal(objects.horizontalPodAutoscaler, undefined);
  assert.equal(objects.podDisruptionBudget, undefined);
  assert.deepEqual(
    fleetObjectList(objects).map((o) => o.kind),
    ['ServiceAccount', 'Service', 'Deployment'],
  );
});

test('drainSeconds: the proxy waits that long, both preStop hooks too, and the default grace period leaves room', () => {
  const pod = renderFleetObjects({ ...INFRA, drainSeconds: 300 }, GATEWAY_NAMESPACE).workload.spec!.template
    .spec!;
  const proxy = pod.containers.find((c) => c.name === 'proxy')!;
  assert.equal(proxy.args![proxy.args!.indexOf('--max-drain-seconds') + 1], '300');
  for (const c of pod.containers) {
    const hook = c.lifecycle!.preStop!.exec!.command!;
    assert.equal(hook[hook.indexOf('--timeout-seconds') + 1], '300', c.name);
  }
  assert.equal(pod.terminationGracePeriodSeconds, 330);
  const defaults = renderFleetObjects(INFRA, GATEWAY_NAMESPACE).workload.spec!.template.spec!;
  const args = defaults.containers[0]!.args!;
  assert.equal(args[args.indexOf('--max-drain-seconds') + 1], '60');
});

test('an autoscaler: the Deployment has no replicas field at all, the HPA and the budget are named and labelled as the fleet', () => {
  const infra: FleetInfra = {
    ...INFRA,
    propagated: { labels: { 'cost-center': 'edge' }, annotations: {} },
    kubernetes: {
      deployment: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } },
      horizontalPodAutoscaler: {
        minReplicas: 2,
        maxReplicas: 7,
        metrics: [
          {
            type: 'Resource',
            resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
          },
        ],
        behavior: { scaleDown: { stabilizationWindowSeconds: 300 } },
      },
      podDisruptionBudget: { minAvailable: 1 },
    },
  };
  const objects = renderFleetObjects(infra, GATEWAY_NAMESPACE);
  const deployment = objects.workload as V1Deployment;
  assert.ok(!('replicas' in (deployment.spec ?? {})), 'server-side apply must not own replicas');
  assert.deepEqual(deployment.spec?.strategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
  });
  const hpa = objects.horizontalPodAutoscaler!;
  assert.equal(hpa.apiVersion, 'autoscaling/v2');
  assert.deepEqual(hpa.spec, {
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: INFRA.name },
    minReplicas: 2,
    maxReplicas: 7,
    metrics: [
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
      },
    ],
    behavior: { scaleDown: { stabilizationWindowSeconds: 300 } },
  });
  const pdb = objects.podDisruptionBudget!;
  assert.equal(pdb.apiVersion, 'policy/v1');
  assert.deepEqual(pdb.spec, { selector: { matchLabels: INFRA.labels }, minAvailable: 1 });
  for (const o of [hpa, pdb]) {
    assert.equal(o.metadata?.name, INFRA.name);
    assert.equal(o.metadata?.namespace, INFRA.namespace);
    assert.equal(o.metadata?.labels?.['gateway.portico.io/owning-gateway-name'], 'eg');
    assert.equal(o.metadata?.labels?.['cost-center'], 'edge');
    assert.equal(o.metadata?.ownerReferences?.[0]?.uid, 'u-1');
  }
  assert.deepEqual(
    fleetObjectList(objects).map((o) => o.kind),
    ['ServiceAccount', 'Service', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget'],
  );
});

test('replicas without an autoscaler; a DaemonSet instead of the Deployment, with the same pods', () => {
  const three = renderFleetObjects(
    { ...INFRA, kubernetes: { deployment: { replicas: 3 } } },
    GATEWAY_NAMESPACE,
  );
  assert.equal((three.workload as V1Deployment).spec?.replicas, 3);
  const perNode = renderFleetObjects(
    {
      ...INFRA,
      kubernetes: {
        daemonSet: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%' } } },
        podDisruptionBudget: { maxUnavailable: 1 },
      },
    },
    GATEWAY_NAMESPACE,
  );
  const daemonSet = perNode.workload as V1DaemonSet;
  assert.equal(daemonSet.kind, 'DaemonSet');
  assert.equal(daemonSet.apiVersion, 'apps/v1');
  assert.deepEqual(daemonSet.spec?.updateStrategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: '25%' },
  });
  assert.deepEqual(daemonSet.spec?.selector.matchLabels, INFRA.labels);
  assert.deepEqual(daemonSet.spec?.template, three.workload.spec?.template);
  assert.deepEqual(perNode.podDisruptionBudget?.spec?.maxUnavailable, 1);
});

test('pod fields merge over the defaults: Portico’s labels and the Gateway’s win, pull secrets add up', () => {
  const infra: FleetInfra = {
    ...INFRA,
    propagated: { labels: {}, annotations: { owner: 'team-a' } },
    kubernetes: {
      pod: {
        labels: { team: 'edge', 'app.kubernetes.io/name': 'mine' },
        annotations: { 'prometheus.io/scrape': 'true', owner: 'class' },
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gateway', effect: 'NoSchedule' }],
        affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } },
        topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' },
        ],
        priorityClassName: 'system-cluster-critical',
        imagePullSecrets: [{ name: 'registry' }, { name: 'shared' }],
        terminationGracePeriodSeconds: 120,
      },
    },
  };
  const template = renderFleetObjects(infra, { ...GATEWAY_NAMESPACE, imagePullSecrets: ['shared'] }).workload
    .spec!.template;
  assert.equal(template.metadata?.labels?.team, 'edge');
  assert.equal(template.metadata?.labels?.['app.kubernetes.io/name'], 'portico-proxy');
  assert.deepEqual(template.metadata?.annotations, { 'prometheus.io/scrape': 'true', owner: 'team-a' });
  const pod = template.spec!;
  assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/os': 'linux' });
  assert.equal(pod.tolerations?.[0]?.key, 'dedicated');
  assert.ok(pod.affinity?.podAntiAffinity !== undefined);
  assert.equal(pod.topologySpreadConstraints?.[0]?.topologyKey, 'topology.kubernetes.io/zone');
  assert.equal(pod.priorityClassName, 'system-cluster-critical');
  assert.deepEqual(pod.imagePullSecrets, [{ name: 'shared' }, { name: 'registry' }]);
  assert.equal(pod.terminationGracePeriodSeconds, 120);
});

test('security contexts merge field by field: a user’s uid and capabilities, never less than Portico’s own', () => {
  const infra: FleetInfra = {
    ...INFRA,
    kubernetes: {
      pod: { securityContext: { runAsUser: 10001, fsGroup: 10001 } },
      container: {
        resources: { requests: { cpu: '500m', memory: '256Mi' }, limits: { cpu: 2, memory: '1Gi' } },
        env: [{ name: 'NODE_OPTIONS', value: '--max-old-space-size=768' }],
        securityContext: { capabilities: { drop: ['NET_RAW'], add: ['NET_BIND_SERVICE'] } },
      },
    },
  };
  const pod = renderFleetObjects(infra, GATEWAY_NAMESPACE).workload.spec!.template.spec!;
  assert.deepEqual(pod.securityContext, {
    runAsNonRoot: true,
    runAsUser: 10001,
    runAsGroup: 65532,
    fsGroup: 10001,
    seccompProfile: { type: 'RuntimeDefault' },
  });
  const [proxy, sidecar] = pod.containers;
  assert.deepEqual(proxy?.securityContext, {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL', 'NET_RAW'], add: ['NET_BIND_SERVICE'] },
    seccompProfile: { type: 'RuntimeDefault' },
  });
  assert.deepEqual(proxy?.resources, {
    requests: { cpu: '500m', memory: '256Mi' },
    limits: { cpu: 2, memory: '1Gi' },
  });
  assert.deepEqual(
    proxy?.env?.map((e) => e.name),
    ['POD_NAME', 'POD_NAMESPACE', 'NODE_OPTIONS'],
  );
  // The shutdown-manager sidecar is Portico's alone.
  assert.deepEqual(sidecar?.securityContext?.capabilities, { drop: ['ALL'] });
  assert.deepEqual(sidecar?.resources, { requests: { cpu: '10m', memory: '32Mi' } });
});

test('Service fields: type, load-balancer settings, and the class’s annotations under the Gateway’s', () => {
  const infra: FleetInfra = {
    ...INFRA,
    propagated: { labels: {}, annotations: { owner: 'team-a' } },
    kubernetes: {
      service: {
        type: 'LoadBalancer',
        annotations: { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb', owner: 'class' },
        externalTrafficPolicy: 'Local',
        loadBalancerClass: 'example.com/lb',
        loadBalancerSourceRanges: ['10.0.0.0/8'],
        allocateLoadBalancerNodePorts: false,
      },
    },
  };
  const { service } = renderFleetObjects(infra, GATEWAY_NAMESPACE);
  assert.deepEqual(service.metadata?.annotations, {
    'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb',
    owner: 'team-a',
  });
  assert.equal(service.spec?.externalTrafficPolicy, 'Local');
  assert.equal(service.spec?.loadBalancerClass, 'example.com/lb');
  assert.deepEqual(service.spec?.loadBalancerSourceRanges, ['10.0.0.0/8']);
  assert.equal(service.spec?.allocateLoadBalancerNodePorts, false);
  assert.equal(service.spec?.ports?.length, 2);
  const internal = renderFleetObjects(
    { ...INFRA, kubernetes: { service: { type: 'ClusterIP' } } },
    GATEWAY_NAMESPACE,
  );
  assert.equal(internal.service.spec?.type, 'ClusterIP');
});

test("the controller's json log format reaches its proxies; text, the proxy's default, adds no flag", () => {
  const argsOf = (logFormat: 'text' | 'json' | undefined) =>
    renderFleetObjects(INFRA, { ...GATEWAY_NAMESPACE, ...(logFormat === undefined ? {} : { logFormat }) })
      .workload.spec!.template.spec!.containers[0]!.args!;
  const json = argsOf('json');
  assert.deepEqual(json.slice(json.indexOf('--log-format'), json.indexOf('--log-format') + 2), [
    '--log-format',
    'json',
  ]);
  assert.ok(!argsOf('text').includes('--log-format'));
  assert.deepEqual(argsOf('text'), argsOf(undefined));
});

test("a Gateway's requested address is the LoadBalancer Service's loadBalancerIP; a ClusterIP Service has none", () => {
  assert.equal(renderFleetObjects(INFRA, GATEWAY_NAMESPACE).service.spec?.loadBalancerIP, undefined);
  const requested: FleetInfra = { ...INFRA, requestedAddress: '10.201.0.250' };
  assert.equal(renderFleetObjects(requested, GATEWAY_NAMESPACE).service.spec?.loadBalancerIP, '10.201.0.250');
  const clusterIp: FleetInfra = { ...requested, kubernetes: { service: { type: 'ClusterIP' } } };
  const service = renderFleetObjects(clusterIp, GATEWAY_NAMESPACE).service;
  assert.equal(service.spec?.type, 'ClusterIP');
  assert.equal(service.spec?.loadBalancerIP, undefined);
});

test('a Gateway asking only for Cluster addresses gets a ClusterIP Service, with the cluster IP it names', () => {
  const internal: FleetInfra = { ...INFRA, clusterOnly: true, requestedClusterIP: '10.96.0.77' };
  const service = renderFleetObjects(internal, GATEWAY_NAMESPACE).service;
  assert.equal(service.spec?.type, 'ClusterIP');
  assert.equal(service.spec?.clusterIP, '10.96.0.77');
  // The fleet's shape names the type: it stands, and the cluster IP is still asked for.
  const shaped: FleetInfra = { ...internal, kubernetes: { service: { type: 'NodePort' } } };
  const nodePort = renderFleetObjects(shaped, GATEWAY_NAMESPACE).service;
  assert.equal(nodePort.spec?.type, 'NodePort');
  assert.equal(nodePort.spec?.clusterIP, '10.96.0.77');
  assert.equal(renderFleetObjects(INFRA, GATEWAY_NAMESPACE).service.spec?.clusterIP, undefined);
});

test('the pod template does not change with the listeners: a listener added leaves the proxies running', () => {
  const options = {
    image: 'portico:dev',
    controllerNamespace: 'portico-gateway-system',
    deployType: 'GatewayNamespace' as const,
  };
  const before = renderFleetObjects(INFRA, options);
  const more = {
    ...INFRA,
    ports: [...INFRA.ports, { name: 'tcp-7000', port: 7000, protocol: 'TCP' as const, containerPort: 7000 }],
  };
  const after = renderFleetObjects(more, options);
  assert.deepEqual(after.workload.spec?.template, before.workload.spec?.template);
  // The Service is where the port appears.
  assert.deepEqual(
    after.service.spec?.ports?.map((p) => [p.port, p.targetPort]),
    [
      [80, 10080],
      [8080, 8080],
      [7000, 7000],
    ],
  );
});

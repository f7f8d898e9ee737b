// The gateway-helm chart, with the toolchain's helm: lint, one golden `helm template` per install mode
// (regenerate with UPDATE_GOLDEN=1 and review the diff), values validation that names the key, the Gateway
// API CRDs byte for byte as the pinned release ships them, and versions that follow package.json.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import {
  BUNDLE_VERSION_ANNOTATION,
  GATEWAY_API_BUNDLE_VERSION,
  READ_GATEWAY_API_CRDS,
} from '../../src/api/gateway-api-bundle.js';
import { COMMON_INFRA_LABELS } from '../../src/ir/fleet-infra.js';
import { createMetrics, formatMetrics } from '../../src/provider/kubernetes/metrics.js';
import { emptyMetrics, renderMetrics } from '../../src/proxy/telemetry/metrics.js';
import { workerLines } from '../../src/proxy/workers/pool.js';
import { binary, REPO, readManifest } from '../../toolchain/manifest.js';

const CHART = join(REPO, 'charts/gateway-helm');
const TESTDATA = join(REPO, 'test/charts/testdata');

function helm(args: string[]) {
  return spawnSync(binary(readManifest(), 'helm'), args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

function template(namespace: string, sets: string[]): string {
  const r = helm(['template', 'portico', CHART, '-n', namespace, ...sets.flatMap((s) => ['--set', s])]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

const MODES: Record<string, { namespace: string; sets: string[] }> = {
  'controller-namespace': { namespace: 'portico-gateway-system', sets: [] },
  'gateway-namespace': { namespace: 'portico-gateway-system', sets: ['config.deployType=GatewayNamespace'] },
  'gateway-namespace-watch-list': {
    namespace: 'portico-gateway-system',
    sets: [
      'config.deployType=GatewayNamespace',
      'config.watch.type=Namespaces',
      'config.watch.namespaces={team-a,team-b}',
    ],
  },
  tenant: {
    namespace: 'team-a',
    sets: [
      'config.controllerName=gateway.portico.io/team-a-gatewayclass-controller',
      'config.watch.type=Namespaces',
      'config.watch.namespaces={team-a}',
    ],
  },
  'namespace-selector': {
    namespace: 'portico-gateway-system',
    sets: ['config.watch.type=NamespaceSelector', 'config.watch.namespaceSelector.matchLabels.tenant=a'],
  },
  'operator-values': {
    namespace: 'portico-gateway-system',
    sets: [
      'image.repository=registry.example.com/portico',
      'image.tag=custom',
      'image.pullPolicy=Always',
      'image.pullSecrets[0].name=regcred',
      'controller.replicas=2',
      'controller.nodeSelector.disk=ssd',
      'controller.podAnnotations.team=edge',
      'logLevel=debug',
      'service.discoveryPort=28000',
      'certgen.rotate=true',
    ],
  },
};

test('helm lint passes', () => {
  const r = helm(['lint', CHART, '--strict']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

for (const [mode, { namespace, sets }] of Object.entries(MODES)) {
  test(`helm template: ${mode} matches its golden file`, () => {
    const actual = template(namespace, sets);
    const file = join(TESTDATA, `${mode}.yaml`);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, actual);
    assert.equal(actual, readFileSync(file, 'utf8'), `${file} differs; UPDATE_GOLDEN=1 regenerates it`);
  });
}

test('Gateway Namespace Mode grants exactly the infra-manager rules of the specification', () => {
  const docs = parseAllDocuments(template('portico-gateway-system', ['config.deployType=GatewayNamespace']))
    .map(
      (d) => d.toJS() as { kind: string; metadata: { name: string }; rules?: unknown[]; roleRef?: unknown },
    )
    .filter((d) => d !== null);
  const role = docs.find(
    (d) => d.kind === 'ClusterRole' && d.metadata.name === 'gateway-helm-cluster-infra-manager',
  );
  const verbs = ['create', 'get', 'delete', 'deletecollection', 'patch'];
  assert.deepEqual(role?.rules, [
    { apiGroups: [''], resources: ['serviceaccounts', 'services', 'configmaps'], verbs },
    { apiGroups: ['apps'], resources: ['deployments', 'daemonsets'], verbs },
    {
      apiGroups: ['autoscaling', 'policy'],
      resources: ['horizontalpodautoscalers', 'poddisruptionbudgets'],
      verbs,
    },
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  ]);
  assert.ok(
    docs.some(
      (d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === 'gateway-helm-cluster-infra-manager',
    ),
  );
  // Without Gateway Namespace Mode there is no such role.
  assert.doesNotMatch(template('portico-gateway-system', []), /cluster-infra-manager/);
});

test('both modes: the controller’s own namespace grants exactly what a fleet’s shape adds, for the applier and its sweep', () => {
  for (const sets of [[], ['config.deployType=GatewayNamespace']]) {
    const docs = parseAllDocuments(template('portico-gateway-system', sets))
      .map((d) => d.toJS() as { kind: string; metadata: { name: string }; rules?: unknown[] } | null)
      .filter((d) => d !== null);
    const role = docs.find((d) => d.kind === 'Role' && d.metadata.name === 'portico-gateway');
    const verbs = ['create', 'get', 'list', 'patch', 'delete'];
    for (const rule of [
      { apiGroups: ['apps'], resources: ['daemonsets'], verbs },
      { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs },
      { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs },
    ])
      assert.ok(
        role?.rules?.some((r) => JSON.stringify(r) === JSON.stringify(rule)),
        `${sets.join(' ') || 'Controller Namespace Mode'}: ${rule.resources[0]}`,
      );
  }
});

test('the controller may read exactly the Gateway API CRDs it checks the versions of, by name, in every mode', () => {
  const rule = {
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    resourceNames: READ_GATEWAY_API_CRDS.map((crd) => `${crd}.gateway.networking.k8s.io`),
    verbs: ['get'],
  };
  for (const sets of [
    [],
    ['config.deployType=GatewayNamespace'],
    ['config.watch.type=Namespaces', 'config.watch.namespaces={a}'],
  ]) {
    const docs = parseAllDocuments(template('portico-gateway-system', sets))
      .map((d) => d.toJS() as { kind: string; metadata: { name: string }; rules?: unknown[] } | null)
      .filter((d) => d !== null);
    const reader = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name.endsWith('-reader'));
    assert.ok(
      reader?.rules?.some((r) => JSON.stringify(r) === JSON.stringify(rule)),
      sets.join(' ') || 'default',
    );
  }
});

test('the chart ships the Gateway API bundle the controller is built for', () => {
  for (const f of readdirSync(join(CHART, 'gateway-api'))) {
    const text = readFileSync(join(CHART, 'gateway-api', f), 'utf8');
    assert.match(text, new RegExp(`${BUNDLE_VERSION_ANNOTATION}: ${GATEWAY_API_BUNDLE_VERSION}\\n`), f);
  }
});

interface PolicyRule {
  ports: { port: string | number; protocol: string }[];
  from?: Record<string, unknown>[];
  to?: Record<string, unknown>[];
}

function networkPolicy(sets: string[]): {
  podSelector: unknown;
  ingress: PolicyRule[];
  egress: PolicyRule[];
} {
  const docs = parseAllDocuments(template('portico-gateway-system', sets))
    .map((d) => d.toJS() as { kind: string; spec: unknown } | null)
    .filter((d) => d !== null);
  const policy = docs.find((d) => d.kind === 'NetworkPolicy');
  assert.ok(policy, 'a NetworkPolicy is rendered');
  return policy.spec as { podSelector: unknown; ingress: PolicyRule[]; egress: PolicyRule[] };
}

const ruleFor = (rules: PolicyRule[], port: string | number) =>
  rules.filter((r) => r.ports.some((p) => p.port === port));

test('the controller’s NetworkPolicy: discovery only from proxy pods, health and metrics from where the values say', () => {
  const spec = networkPolicy([]);
  assert.deepEqual(spec.podSelector, {
    matchLabels: {
      'app.kubernetes.io/name': 'portico-gateway',
      'app.kubernetes.io/instance': 'portico',
      'app.kubernetes.io/component': 'controller',
    },
  });
  // The labels every proxy pod gets from the renderer, in any namespace (Gateway Namespace Mode).
  const proxyLabels = {
    'app.kubernetes.io/name': COMMON_INFRA_LABELS['app.kubernetes.io/name'],
    'app.kubernetes.io/managed-by': COMMON_INFRA_LABELS['app.kubernetes.io/managed-by'],
  };
  assert.deepEqual(ruleFor(spec.ingress, 'discovery'), [
    {
      ports: [{ port: 'discovery', protocol: 'TCP' }],
      from: [{ namespaceSelector: {}, podSelector: { matchLabels: proxyLabels } }],
    },
  ]);
  assert.deepEqual(ruleFor(spec.ingress, 'http'), [{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
  assert.deepEqual(ruleFor(spec.ingress, 'metrics')[0]?.from, [{ podSelector: {} }]);
  assert.equal(spec.ingress.length, 3, 'no other port is open');
  assert.deepEqual(
    spec.egress.map((r) => r.ports.map((p) => `${p.port}/${p.protocol}`)),
    [['443/TCP', '6443/TCP'], ['53/UDP', '53/TCP'], ['http/TCP']],
  );

  const narrowed = networkPolicy([
    'networkPolicy.healthFrom[0].namespaceSelector.matchLabels.probes=yes',
    'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring',
    'networkPolicy.apiServer.to[0].ipBlock.cidr=10.0.0.1/32',
  ]);
  const health = ruleFor(narrowed.ingress, 'http')[0]?.from ?? [];
  assert.equal(health.length, 2, 'the other replicas, and the peers the values name');
  assert.deepEqual(health[1], { namespaceSelector: { matchLabels: { probes: 'yes' } } });
  assert.deepEqual(ruleFor(narrowed.ingress, 'metrics')[0]?.from, [
    { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
  ]);
  assert.deepEqual(ruleFor(narrowed.egress, 6443)[0]?.to, [{ ipBlock: { cidr: '10.0.0.1/32' } }]);

  assert.doesNotMatch(
    template('portico-gateway-system', ['networkPolicy.enabled=false']),
    /kind: NetworkPolicy/,
  );
  const wrong = helm(['template', 'portico', CHART, '--set', 'networkPolicy.metricsFrom[0].pods=x']);
  assert.notEqual(wrong.status, 0);
  assert.match(wrong.stderr, /pods/);
});

/** Every series name Portico's proxies and controller expose, from their own renderers' TYPE lines. */
function exposedSeries(): Set<string> {
  const empty = emptyMetrics();
  const text = [
    renderMetrics(empty),
    workerLines([empty], 1, 0),
    formatMetrics(createMetrics(), { residentBytes: 0, heapUsedBytes: 0, cpuSeconds: 0 }),
  ].join('\n');
  const SUFFIXES: Record<string, string[]> = {
    histogram: ['_bucket', '_sum', '_count'],
    summary: ['_sum', '_count'],
  };
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    for (const suffix of SUFFIXES[type!] ?? []) names.add(`${name}${suffix}`);
  }
  return names;
}

test('the Grafana dashboard: off by default; on, a labelled ConfigMap whose every query reads a series Portico exposes', () => {
  assert.doesNotMatch(template('portico-gateway-system', []), /portico-gateway-dashboard/);
  const docs = parseAllDocuments(
    template('portico-gateway-system', [
      'grafana.dashboard.enabled=true',
      'grafana.dashboard.namespace=monitoring',
      'grafana.dashboard.annotations.grafana_folder=Gateways',
    ]),
  )
    .map(
      (d) =>
        d.toJS() as {
          kind: string;
          metadata: {
            name: string;
            namespace: string;
            labels: Record<string, string>;
            annotations?: Record<string, string>;
          };
          data?: Record<string, string>;
        } | null,
    )
    .filter((d) => d !== null);
  const map = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'portico-gateway-dashboard');
  assert.ok(map, 'the dashboard ConfigMap is rendered');
  assert.equal(map.metadata.namespace, 'monitoring');
  assert.equal(map.metadata.labels.grafana_dashboard, '1');
  assert.deepEqual(map.metadata.annotations, { grafana_folder: 'Gateways' });
  const dashboard = JSON.parse(map.data!['portico-gateway.json']!) as {
    uid: string;
    panels: { type: string; title: string; targets?: { expr: string }[] }[];
  };
  assert.equal(dashboard.uid, 'portico-gateway');
  const exposed = exposedSeries();
  const queries = dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr })),
  );
  assert.ok(queries.length >= 15, `${queries.length} queries`);
  for (const { title, expr } of queries) {
    const read = [...expr.matchAll(/\b((?:portico|process|nodejs)_[a-z_]+)\b/g)].map((m) => m[1]!);
    assert.ok(read.length > 0, `${title}: ${expr} reads no Portico series`);
    for (const name of read)
      assert.ok(exposed.has(name), `${title}: ${name} is not a series Portico exposes`);
  }
});

test('scrape annotations on the controller pods only when asked', () => {
  const annotations = (sets: string[]) => {
    const docs = parseAllDocuments(template('portico-gateway-system', sets))
      .map(
        (d) =>
          d.toJS() as {
            kind: string;
            spec?: { template: { metadata: { annotations: Record<string, string> } } };
          } | null,
      )
      .filter((d) => d !== null);
    return docs.find((d) => d.kind === 'Deployment')!.spec!.template.metadata.annotations;
  };
  assert.equal(annotations([])['prometheus.io/scrape'], undefined);
  const on = annotations(['metrics.scrapeAnnotations=true']);
  assert.equal(on['prometheus.io/scrape'], 'true');
  assert.equal(on['prometheus.io/port'], '19001');
  assert.equal(on['prometheus.io/path'], '/metrics');
});

test('the controller’s PodDisruptionBudget: off by default; on, maxUnavailable 1 unless the values say otherwise', () => {
  const budget = (sets: string[]) =>
    parseAllDocuments(template('portico-gateway-system', sets))
      .map((d) => d.toJS() as { kind: string; spec: Record<string, unknown> } | null)
      .find((d) => d?.kind === 'PodDisruptionBudget');
  assert.equal(budget([]), undefined);
  const on = budget(['controller.podDisruptionBudget.enabled=true']);
  assert.equal(on?.spec.maxUnavailable, 1);
  assert.deepEqual(on?.spec.selector, {
    matchLabels: {
      'app.kubernetes.io/name': 'portico-gateway',
      'app.kubernetes.io/instance': 'portico',
      'app.kubernetes.io/component': 'controller',
    },
  });
  const half = budget([
    'controller.podDisruptionBudget.enabled=true',
    'controller.podDisruptionBudget.minAvailable=50%',
  ]);
  assert.deepEqual([half?.spec.minAvailable, half?.spec.maxUnavailable], ['50%', undefined]);
  const none = budget([
    'controller.podDisruptionBudget.enabled=true',
    'controller.podDisruptionBudget.maxUnavailable=0',
  ]);
  assert.equal(none?.spec.maxUnavailable, 0);
  const both = helm([
    'template',
    'portico',
    CHART,
    '--set',
    'controller.podDisruptionBudget.minAvailable=1',
    '--set',
    'controller.podDisruptionBudget.maxUnavailable=1',
  ]);
  assert.notEqual(both.status, 0);
  assert.match(both.stderr, /controller\.podDisruptionBudget: set minAvailable or maxUnavailable, not both/);
});

test('the status write rate limit is the controller flags', () => {
  // --set would pass 2.5 as a string (helm reads only whole numbers as numbers): a fraction goes as JSON.
  const r = helm([
    'template',
    'portico',
    CHART,
    '--set-json',
    'controller.statusWrites={"qps":2.5,"burst":3}',
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /- --status-write-qps=2\.5\n\s+- --status-write-burst=3\n/);
});

test('a wrong value fails with the key named', () => {
  for (const [set, key] of [
    ['config.deployType=Everywhere', 'deployType'],
    ['controller.replica=2', 'replica'],
    ['image.pullPolicy=Sometimes', 'pullPolicy'],
    ['service.discoveryPort=70000', 'discoveryPort'],
    ['grafana.dashboard.lable=x', 'lable'],
    ['controller.podDisruptionBudget.minAvailable=most', 'minAvailable'],
    ['controller.statusWrites.qps=0', 'qps'],
    ['controller.statusWrites.burst=1.5', 'burst'],
    ['controller.statusWrites.rate=5', 'rate'],
  ] as const) {
    const r = helm(['template', 'portico', CHART, '--set', set]);
    assert.notEqual(r.status, 0, set);
    assert.match(r.stderr, new RegExp(key), `${set}: ${r.stderr}`);
  }
  const missing = helm(['template', 'portico', CHART, '--set', 'config.watch.type=Namespaces']);
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /namespaces/);
});

test('the chart carries the Gateway API standard CRDs exactly as the pinned release ships them', () => {
  const upstream = readManifest().files.gatewayApiCrds;
  const files = readdirSync(upstream)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  assert.deepEqual(readdirSync(join(CHART, 'gateway-api')).sort(), files);
  for (const f of files) {
    assert.equal(
      readFileSync(join(CHART, 'gateway-api', f), 'utf8'),
      readFileSync(join(upstream, f), 'utf8'),
      f,
    );
  }
  // Off by default; on, every file is rendered.
  assert.doesNotMatch(
    template('portico-gateway-system', []),
    /gateway\.networking\.k8s\.io_gateways|name: gateways\.gateway/,
  );
  const withCrds = template('portico-gateway-system', ['crds.gatewayAPI.enabled=true']);
  assert.match(withCrds, /name: gateways\.gateway\.networking\.k8s\.io/);
  assert.match(withCrds, /name: httproutes\.gateway\.networking\.k8s\.io/);
  // v1.7's safe-upgrades policy comes with them: once installed, it refuses any Gateway API CRD older than v1.7.
  assert.match(withCrds, /^kind: ValidatingAdmissionPolicy$/m);
  assert.match(withCrds, /^kind: ValidatingAdmissionPolicyBinding$/m);
  assert.match(withCrds, /v1\.\[0-6\]/);
});

test("the experimental channel is the same release's experimental CRDs, byte for byte, when asked for", () => {
  const upstream = join(readManifest().files.gatewayApiCrds, '..', 'experimental');
  const files = readdirSync(upstream)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .sort();
  assert.deepEqual(readdirSync(join(CHART, 'gateway-api-experimental')).sort(), files);
  for (const f of files) {
    assert.equal(
      readFileSync(join(CHART, 'gateway-api-experimental', f), 'utf8'),
      readFileSync(join(upstream, f), 'utf8'),
      f,
    );
  }
  const standard = template('portico-gateway-system', ['crds.gatewayAPI.enabled=true']);
  assert.doesNotMatch(standard, /channel: experimental|xbackends/);
  const experimental = template('portico-gateway-system', [
    'crds.gatewayAPI.enabled=true',
    'crds.gatewayAPI.channel=experimental',
  ]);
  assert.match(experimental, /name: gateways\.gateway\.networking\.k8s\.io/);
  assert.match(experimental, /name: xbackends\.gateway\.networking\.x-k8s\.io/);
  assert.match(experimental, /routability:/);
});

test('chart version and appVersion follow package.json', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as {
    version: string;
    appVersion: string;
  };
  assert.equal(chart.version, pkg.version);
  assert.equal(chart.appVersion, pkg.version);
});

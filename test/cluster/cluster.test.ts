// The test cluster itself, on its own: real components at the pinned versions; kubectl (the machine's, and
// the toolchain's) doing what users do; pod networking, Services, load balancers and DNS; CRD schemas
// enforced; and stop() leaving the host exactly as it found it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KUBERNETES_VERSION } from '../../toolchain/artifacts.js';
import { binary } from '../../toolchain/manifest.js';
import { httpRequest } from '../support/http.js';
import { ClusterStartError } from './component.js';
import { type Cluster, startCluster } from './harness.js';
import { type HostState, hostState, stateDifference } from './host-state.js';
import { asList, call, eventually } from './kube-api.js';

const skip = process.getuid?.() === 0 ? false : 'the cluster needs root';
let cluster: Cluster;
let before_: HostState;

/** The machine's kubectl when there is one (users have it), else the toolchain's. */
function kubectlPath(): string {
  const which = spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' });
  return which.status === 0 ? which.stdout.trim() : binary(cluster.toolchain, 'kubectl');
}

/** kubectl's discovery cache goes to the cluster's directory, not the machine's ~/.kube. */
function kubectlArgs(args: string[]): string[] {
  return ['--kubeconfig', cluster.kubeconfigPath, '--cache-dir', join(cluster.dir, 'kube-cache'), ...args];
}

function kubectl(args: string[], input?: string): string {
  const r = spawnSync(kubectlPath(), kubectlArgs(args), {
    encoding: 'utf8',
    input,
  });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/**
 * Runs a kubectl that does not end by itself (a watch): once its output matches `ready`, calls `act`, then
 * resolves with the output as soon as it matches `done`. Fails after 20 s.
 */
function watchUntil(args: string[], ready: RegExp, act: () => void, done: RegExp): Promise<string> {
  const child = spawn(kubectlPath(), kubectlArgs(args));
  let out = '';
  let acted = false;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`kubectl ${args.join(' ')}: no match in 20 s: ${out}`)),
      20_000,
    );
    child.on('error', reject);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (!acted && ready.test(out)) {
        acted = true;
        try {
          act();
        } catch (error) {
          reject(error);
        }
      }
      if (done.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    });
  }).finally(() => child.kill());
}

before(async () => {
  if (skip !== false) return;
  before_ = hostState();
  cluster = await startCluster();
});
after(async () => {
  // Normally the last test stopped it; this covers a failure before that.
  if (cluster !== undefined) await cluster.stop();
});

test('the API server reports the pinned Kubernetes version and the node is Ready', { skip }, async () => {
  const version = await call(cluster, 'GET', '/version');
  assert.equal(version.body.gitVersion, KUBERNETES_VERSION);
  const node = await call(cluster, 'GET', `/api/v1/nodes/${cluster.nodeName}`);
  assert.ok(asList(node.body.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'));
  assert.match(String(node.body.status?.nodeInfo?.containerRuntimeVersion), /^containerd:\/\/2\./);
  assert.equal(node.body.status?.nodeInfo?.kubeletVersion, KUBERNETES_VERSION);
});

test('kubectl: create (protobuf), apply, server-side apply, patch, get -w, delete', { skip }, async () => {
  kubectl(['create', 'namespace', 'kubectl-test']);
  kubectl(['-n', 'kubectl-test', 'create', 'configmap', 'x', '--from-literal=a=b']);
  assert.equal(kubectl(['-n', 'kubectl-test', 'get', 'configmap', 'x', '-o', 'jsonpath={.data.a}']), 'b');
  const cm = (name: string, data: Record<string, string>) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'kubectl-test' },
      data,
    });
  kubectl(['apply', '-f', '-'], cm('y', { one: '1' }));
  kubectl(['apply', '--server-side', '--field-manager=second', '-f', '-'], cm('z', { two: '2' }));
  // Server-side apply tracks ownership: another manager changing the same field conflicts.
  const conflict = spawnSync(
    kubectlPath(),
    kubectlArgs(['apply', '--server-side', '--field-manager=third', '-f', '-']),
    { encoding: 'utf8', input: cm('z', { two: 'changed' }) },
  );
  assert.notEqual(conflict.status, 0);
  assert.match(conflict.stderr, /conflict/i);
  kubectl([
    '-n',
    'kubectl-test',
    'patch',
    'configmap',
    'y',
    '--type',
    'merge',
    '-p',
    '{"data":{"three":"3"}}',
  ]);
  assert.equal(kubectl(['-n', 'kubectl-test', 'get', 'configmap', 'y', '-o', 'jsonpath={.data.three}']), '3');
  // A watch sees the deletion: kubectl prints the current object first (the watch is open), then DELETED.
  const events = await watchUntil(
    ['-n', 'kubectl-test', 'get', 'configmap', 'y', '-w', '--output-watch-events', '-o', 'json'],
    /"type":\s*"ADDED"/,
    () => kubectl(['-n', 'kubectl-test', 'delete', 'configmap', 'y']),
    /"type":\s*"DELETED"/,
  );
  assert.match(events, /"type":\s*"ADDED"[\s\S]*"type":\s*"DELETED"/);
  // CRD schemas are enforced: the DataPlaneProxy field has a type, and CEL rules of the Gateway API CRDs apply.
  const bad = spawnSync(kubectlPath(), kubectlArgs(['apply', '-f', '-']), {
    encoding: 'utf8',
    input: JSON.stringify({
      apiVersion: 'gateway.portico.io/v1alpha1',
      kind: 'DataPlaneProxy',
      metadata: { name: 'p', namespace: 'kubectl-test' },
      spec: { mergeGateways: 'yes' },
    }),
  });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /spec\.mergeGateways.*boolean/);
  const listeners = [
    { name: 'same', port: 80, protocol: 'HTTP' },
    { name: 'same', port: 81, protocol: 'HTTP' },
  ];
  const gw = spawnSync(kubectlPath(), kubectlArgs(['apply', '-f', '-']), {
    encoding: 'utf8',
    input: JSON.stringify({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'g', namespace: 'kubectl-test' },
      spec: { gatewayClassName: 'x', listeners },
    }),
  });
  assert.notEqual(gw.status, 0, 'duplicate listener names are refused by the CRD');
  kubectl(['delete', 'namespace', 'kubectl-test', '--wait=true']);
});

test('pods run from the imported images: logs, exec, DNS for cluster names only', { skip }, async () => {
  kubectl(['create', 'namespace', 'pods-test']);
  const image = cluster.toolchain.images.portico?.names[0] ?? '';
  kubectl([
    '-n',
    'pods-test',
    'run',
    'tools',
    `--image=${image}`,
    '--image-pull-policy=Never',
    '--command',
    '--',
    '/usr/local/bin/node',
    '-e',
    // PID 1 (--command skips the image's tini) gets no default SIGTERM action: without this handler the
    // namespace deletion below waits out the 30 s grace period.
    "console.log('started'); process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1e9)",
  ]);
  kubectl(['-n', 'pods-test', 'wait', '--for=condition=Ready', 'pod/tools', '--timeout=90s']);
  // Ready means the container started, not that node has printed yet (a loaded machine takes seconds).
  const logs = await eventually(
    async () => {
      const out = kubectl(['-n', 'pods-test', 'logs', 'tools']);
      return /started/.test(out) ? out : undefined;
    },
    'the pod to log "started"',
    30_000,
    500,
  );
  assert.match(logs, /started/);
  const lookups = kubectl([
    '-n',
    'pods-test',
    'exec',
    'tools',
    '--',
    'node',
    '-e',
    "const d=require('dns').promises; Promise.allSettled(['kubernetes.default.svc.cluster.local','kube-dns.kube-system','example.com'].map(n=>d.lookup(n))).then(r=>console.log(JSON.stringify(r.map(x=>x.status==='fulfilled'?x.value.address:x.reason.code))))",
  ]);
  const [apiIp, dnsIp, external] = JSON.parse(lookups) as string[];
  assert.equal(apiIp, cluster.addresses.kubernetesServiceIp);
  assert.equal(dnsIp, cluster.addresses.dnsServiceIp);
  assert.ok(!/^\d/.test(String(external)), `a name outside the cluster does not resolve (got ${external})`);
  kubectl(['delete', 'namespace', 'pods-test', '--wait=true']);
});

test('Services: pod IPs, ClusterIPs and LoadBalancer addresses answer from the host', { skip }, async () => {
  kubectl(['create', 'namespace', 'svc-test']);
  kubectl([
    '-n',
    'svc-test',
    'create',
    'deployment',
    'echo',
    '--image=registry.k8s.io/gateway-api/conformance/echo-basic:v0.1.0',
    '--replicas=2',
  ]);
  kubectl([
    '-n',
    'svc-test',
    'expose',
    'deployment',
    'echo',
    '--port=80',
    '--target-port=3000',
    '--type=LoadBalancer',
  ]);
  kubectl(['-n', 'svc-test', 'rollout', 'status', 'deployment/echo', '--timeout=90s']);
  const svc = await eventually(async () => {
    const r = await call(cluster, 'GET', '/api/v1/namespaces/svc-test/services/echo');
    return asList(r.body.status?.loadBalancer?.ingress)[0]?.ip !== undefined ? r.body : undefined;
  }, 'a load balancer address');
  const lb = String(asList(svc.status?.loadBalancer?.ingress)[0]?.ip);
  assert.ok(lb.startsWith(cluster.addresses.lbCidr.split('.').slice(0, 3).join('.')), lb);
  const pods = await call(cluster, 'GET', '/api/v1/namespaces/svc-test/pods');
  const podIp = String(asList(pods.body.items)[0]?.status?.podIP);
  for (const [address, port] of [
    [lb, 80],
    [String(svc.spec?.clusterIP), 80],
    [podIp, 3000],
  ] as const) {
    const reply = await eventually(
      async () => {
        const r = await httpRequest(port, '/from-host', { address, host: 'svc.example', timeoutMs: 3000 });
        return r.status === 200 ? r : undefined;
      },
      `${address}:${port}`,
      30_000,
    );
    assert.equal((JSON.parse(reply.body) as { path: string }).path, '/from-host');
  }
  kubectl(['delete', 'namespace', 'svc-test', '--wait=true']);
});

test('stop() removes every process, mount, namespace, interface, route, rule, cgroup and file', {
  skip,
}, async () => {
  await cluster.stop();
  assert.deepEqual(stateDifference(before_, hostState()), []);
});

test('a component that does not come up fails the start within a bound, with its log, and cleans up', {
  skip,
}, async () => {
  const start = hostState();
  const began = Date.now();
  await assert.rejects(
    startCluster({ extraArgs: { 'kube-apiserver': ['--no-such-flag'] } }),
    (error: unknown) =>
      error instanceof ClusterStartError &&
      error.component === 'kube-apiserver' &&
      /unknown flag: --no-such-flag/.test(error.message),
  );
  assert.ok(Date.now() - began < 60_000, 'failed within a minute');
  assert.deepEqual(stateDifference(start, hostState()), []);
});

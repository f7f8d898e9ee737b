import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { call } from './client.js';
import { type Cluster, startCluster } from './harness.js';
import { KUBECTL, KUBECTL_SKIP, kubectl as runKubectl } from './kubectl.js';

const skip = KUBECTL_SKIP;

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ workloads: false });
});
after(() => cluster.stop());

function kubectl(...args: string[]): ReturnType<typeof runKubectl> {
  return runKubectl(cluster.kubeconfigPath, ...args);
}

const MANIFEST = `apiVersion: v1
kind: Namespace
metadata:
  name: kc
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: kc
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: echo
        env: [{name: A, value: "1"}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: kc
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 3000}]
`;

test('kubectl apply -f, get -o json, re-apply with a change, delete', { skip }, async () => {
  const file = join(cluster.dir, 'manifest.yaml');
  writeFileSync(file, MANIFEST);
  const applied = await kubectl('apply', '-f', file);
  assert.equal(applied.code, 0, applied.err);
  assert.match(applied.out, /deployment.apps\/web created/);
  const got = await kubectl('get', 'deployment', 'web', '-n', 'kc', '-o', 'json');
  assert.equal(got.code, 0, got.err);
  const d = JSON.parse(got.out);
  assert.equal(d.spec.replicas, 2);
  assert.ok(d.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
  writeFileSync(file, MANIFEST.replace('replicas: 2', 'replicas: 3').replace('value: "1"', 'value: "2"'));
  const changed = await kubectl('apply', '-f', file);
  assert.equal(changed.code, 0, changed.err);
  assert.match(changed.out, /deployment.apps\/web configured/);
  assert.match(changed.out, /service\/web unchanged/);
  const after = JSON.parse((await kubectl('get', 'deploy', 'web', '-n', 'kc', '-o', 'json')).out);
  assert.equal(after.spec.replicas, 3);
  assert.equal(after.metadata.generation, 2);
  assert.equal(after.spec.template.spec.containers[0].env[0].value, '2');
  const ssa = await kubectl('apply', '--server-side', '-f', file);
  assert.equal(ssa.code, 0, ssa.err);
  // The Namespace goes last and on its own: deleting it first lets the simulator's namespace cleanup (much
  // quicker than a real cluster's) remove the Deployment and Service before kubectl's own DELETEs reach them.
  writeFileSync(file, MANIFEST.slice(MANIFEST.indexOf('---\n') + 4));
  const deleted = await kubectl('delete', '-f', file, '--wait=false');
  assert.equal(deleted.code, 0, deleted.err);
  assert.match(deleted.out, /deployment.apps "web" deleted/);
  assert.match(deleted.out, /service "web" deleted/);
  const namespace = await kubectl('delete', 'namespace', 'kc', '--wait=false');
  assert.equal(namespace.code, 0, namespace.err);
});

test('kubectl get prints server-side tables', { skip }, async () => {
  const ns = await kubectl('get', 'namespaces');
  assert.equal(ns.code, 0, ns.err);
  assert.match(ns.out, /^NAME\s+STATUS\s+AGE\n/);
  assert.match(ns.out, /\nkube-system\s+Active\s+\d+s\n/);
  await call(cluster, 'POST', '/api/v1/namespaces/default/services', {
    metadata: { name: 'tabled' },
    spec: { ports: [{ port: 80 }] },
  });
  const svc = await kubectl('get', 'services', '-n', 'default');
  assert.match(svc.out, /NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE/);
});

test('kubectl get --watch streams changes', { skip }, async () => {
  await call(cluster, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'watched' } });
  const child = spawn(
    KUBECTL,
    ['--kubeconfig', cluster.kubeconfigPath, 'get', 'configmaps', '--watch', '-o', 'name'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8');
  const seen = new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('configmap/late-arrival')) resolve();
    });
  });
  await new Promise<void>((resolve) => {
    child.stdout.once('data', () => resolve());
  });
  await call(cluster, 'POST', '/api/v1/namespaces/default/configmaps', {
    metadata: { name: 'late-arrival' },
  });
  const timeout = setTimeout(() => child.kill(), 10_000);
  await seen;
  clearTimeout(timeout);
  child.kill();
  assert.match(out, /configmap\/watched/);
  assert.match(out, /configmap\/late-arrival/);
});

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { asList, call, eventually, type Loose } from './client.js';
import { type Cluster, startCluster } from './harness.js';

const TOOLBOX = fileURLToPath(new URL('./testdata/toolbox.cjs', import.meta.url));
const NS = 'sim';
let cluster: Cluster;
before(async () => {
  cluster = await startCluster({
    images: [{ contains: 'toolbox', entrypoint: [process.execPath, TOOLBOX] }],
  });
  await call(cluster, 'POST', '/api/v1/namespaces', { metadata: { name: NS } });
  await eventually(
    async () =>
      (await call(cluster, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200
        ? true
        : undefined,
    'default SA',
  );
});
after(() => cluster.stop());

function httpGet(host: string, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function echoDeployment(env: string) {
  return {
    metadata: { name: 'echo' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'echo' } },
      template: {
        metadata: { labels: { app: 'echo' } },
        spec: {
          containers: [
            {
              name: 'echo',
              image: 'gcr.io/k8s-staging-gateway-api/echo-basic:v1',
              env: [
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                { name: 'SERVICE_NAME', value: env },
              ],
              ports: [{ name: 'http', containerPort: 3000 }],
              readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 1 },
            },
          ],
        },
      },
    },
  };
}

const DEPLOY = `/apis/apps/v1/namespaces/${NS}/deployments`;
const PODS = `/api/v1/namespaces/${NS}/pods`;

async function readyDeployment(generation: number): Promise<Loose> {
  return eventually(async () => {
    const d = (await call(cluster, 'GET', `${DEPLOY}/echo`)).body;
    const s = d.status;
    const done =
      s?.observedGeneration === (generation as unknown) &&
      s?.readyReplicas === (2 as unknown) &&
      s?.updatedReplicas === (2 as unknown) &&
      s?.replicas === (2 as unknown);
    return done ? d : undefined;
  }, `deployment generation ${generation} ready`);
}

test('an echo Deployment is reachable through its ClusterIP and LoadBalancer Services; a new template rolls the pods', async () => {
  assert.equal((await call(cluster, 'POST', DEPLOY, echoDeployment('v1'))).status, 201);
  await call(cluster, 'POST', `/api/v1/namespaces/${NS}/services`, {
    metadata: { name: 'echo' },
    spec: { selector: { app: 'echo' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  });
  const lb = await call(cluster, 'POST', `/api/v1/namespaces/${NS}/services`, {
    metadata: { name: 'echo-lb' },
    spec: {
      type: 'LoadBalancer',
      selector: { app: 'echo' },
      ports: [{ name: 'web', port: 8081, targetPort: 3000 }],
    },
  });
  assert.match(String(lb.body.spec?.clusterIP), /^127\.30\./);
  const d = await readyDeployment(1);
  assert.equal(d.status?.availableReplicas, 2);
  const pods = asList((await call(cluster, 'GET', `${PODS}?labelSelector=app%3Decho`)).body.items);
  assert.equal(pods.length, 2);
  for (const p of pods) {
    assert.equal(p.status?.phase, 'Running');
    assert.match(String(p.status?.podIP), /^127\.20\./);
    assert.equal(asList(p.status?.containerStatuses)[0]?.ready, true);
    assert.equal(asList(p.metadata?.ownerReferences)[0]?.kind, 'Deployment');
  }
  const slices = (
    await call(
      cluster,
      'GET',
      `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Decho`,
    )
  ).body;
  const slice = asList(slices.items)[0];
  assert.equal(asList(slice?.endpoints).filter((e) => e.conditions?.ready === (true as unknown)).length, 2);
  assert.deepEqual(
    asList(slice?.ports).map((p) => [p.name, p.port]),
    [['http', 3000]],
  );

  const clusterIP = String(
    (await call(cluster, 'GET', `/api/v1/namespaces/${NS}/services/echo`)).body.spec?.clusterIP,
  );
  const served = new Set<string>();
  for (let i = 0; i < 4; i++) {
    const reply = await httpGet(clusterIP, 80, `/through-cluster-ip/${i}`);
    assert.equal(reply.status, 200);
    const body = JSON.parse(reply.body);
    assert.equal(body.path, `/through-cluster-ip/${i}`);
    assert.equal(body.namespace, NS);
    served.add(body.pod);
  }
  assert.equal(served.size, 2, 'both pods serve through the ClusterIP');
  const lbIP = await eventually(async () => {
    const ingress = (await call(cluster, 'GET', `/api/v1/namespaces/${NS}/services/echo-lb`)).body.status
      ?.loadBalancer?.ingress;
    const ip = asList(ingress)[0]?.ip;
    return ip === undefined ? undefined : String(ip);
  }, 'a load-balancer address');
  assert.match(lbIP, /^127\.40\./);
  const viaLb = JSON.parse((await httpGet(lbIP, 8081, '/through-lb')).body);
  assert.equal(viaLb.path, '/through-lb');

  const oldNames = new Set(pods.map((p) => String(p.metadata?.name)));
  const current = (await call(cluster, 'GET', `${DEPLOY}/echo`)).body;
  const rolled = await call(cluster, 'PUT', `${DEPLOY}/echo`, {
    ...echoDeployment('v2'),
    metadata: { name: 'echo', resourceVersion: current.metadata?.resourceVersion },
  });
  assert.equal(rolled.body.metadata?.generation, 2);
  await readyDeployment(2);
  await eventually(async () => {
    const now = asList((await call(cluster, 'GET', `${PODS}?labelSelector=app%3Decho`)).body.items);
    return now.length === 2 && now.every((p) => !oldNames.has(String(p.metadata?.name))) ? true : undefined;
  }, 'old pods removed');
  const after = JSON.parse((await httpGet(clusterIP, 80, '/after-roll')).body);
  assert.equal(after.service, 'v2');
});

test('a pod resolves Service DNS names, reads its projected token, and reaches the API server in-cluster', async () => {
  await call(cluster, 'POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name: 'toolbox' } });
  await call(cluster, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
    metadata: { name: 'pod-reader' },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
  });
  await call(cluster, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
    metadata: { name: 'toolbox-reads-pods' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'toolbox', namespace: NS }],
  });
  await call(cluster, 'POST', `/api/v1/namespaces/${NS}/secrets`, {
    metadata: { name: 'creds' },
    data: { password: Buffer.from('s3cret').toString('base64') },
  });
  const created = await call(cluster, 'POST', PODS, {
    metadata: { name: 'toolbox' },
    spec: {
      serviceAccountName: 'toolbox',
      containers: [
        {
          name: 'tools',
          image: 'example/toolbox:1',
          args: ['/var/run/secrets/tokens/discovery-token', '/etc/creds/password'],
          env: [{ name: 'MY_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          volumeMounts: [
            { name: 'tokens', mountPath: '/var/run/secrets/tokens' },
            { name: 'creds', mountPath: '/etc/creds', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'creds', secret: { secretName: 'creds' } },
        {
          name: 'tokens',
          projected: {
            sources: [
              {
                serviceAccountToken: {
                  audience: 'portico-test',
                  expirationSeconds: 3600,
                  path: 'discovery-token',
                },
              },
            ],
          },
        },
      ],
    },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const pod = await eventually(async () => {
    const p = (await call(cluster, 'GET', `${PODS}/toolbox`)).body;
    return asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True')
      ? p
      : undefined;
  }, 'toolbox ready');
  const podIP = String(pod.status?.podIP);

  const dns = JSON.parse((await httpGet(podIP, 8080, '/dns')).body);
  const svcIP = (await call(cluster, 'GET', `/api/v1/namespaces/${NS}/services/echo`)).body.spec?.clusterIP;
  assert.equal(dns.short, svcIP);
  assert.equal(dns.full, svcIP);
  assert.deepEqual(dns.promisified, { address: svcIP, family: 4 });
  assert.equal(dns.txt, 'ENODATA');
  assert.equal(dns.echo.path, '/via-dns');

  const { token } = JSON.parse((await httpGet(podIP, 8080, '/token')).body);
  const review = await call(cluster, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
    spec: { token, audiences: ['portico-test'] },
  });
  assert.equal(review.body.status?.authenticated, true);
  assert.equal(review.body.status?.user?.username, `system:serviceaccount:${NS}:toolbox`);
  assert.deepEqual(review.body.status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['toolbox']);

  const secretReply = await httpGet(podIP, 8080, '/secret');
  assert.equal(secretReply.status, 200, secretReply.body);
  const secret = JSON.parse(secretReply.body);
  assert.equal(secret.secret, 's3cret');
  await call(
    cluster,
    'PATCH',
    `/api/v1/namespaces/${NS}/secrets/creds`,
    { stringData: null, data: { password: Buffer.from('rotated').toString('base64') } },
    {
      contentType: 'application/merge-patch+json',
    },
  );
  await eventually(
    async () =>
      JSON.parse((await httpGet(podIP, 8080, '/secret')).body).secret === 'rotated' ? true : undefined,
    'the rotated secret in the volume',
  );

  const api = JSON.parse((await httpGet(podIP, 8080, '/api')).body);
  assert.equal(api.status, 200);
  assert.equal(api.body.kind, 'PodList');
});

test('a crashing container restarts with a growing restartCount; deleting a pod stops its process', async () => {
  await call(cluster, 'POST', PODS, {
    metadata: { name: 'crasher' },
    spec: {
      containers: [{ name: 'c', image: 'example/toolbox:1', command: ['node', '-e', 'process.exit(3)'] }],
    },
  });
  const crashed = await eventually(async () => {
    const p = (await call(cluster, 'GET', `${PODS}/crasher`)).body;
    const s = asList(p.status?.containerStatuses)[0];
    return Number(s?.restartCount ?? 0) >= 2 ? s : undefined;
  }, 'two restarts');
  assert.equal(crashed?.lastState?.terminated?.exitCode, 3);
  const deleted = await call(cluster, 'DELETE', `${PODS}/crasher`);
  assert.equal(deleted.status, 200);
  await eventually(
    async () => ((await call(cluster, 'GET', `${PODS}/crasher`)).status === 404 ? true : undefined),
    'pod removed',
  );
});

test('deleting a pod runs its preStop hook, sends SIGTERM, and SIGKILLs after the grace period', async () => {
  const marks = join(cluster.dir, 'marks.txt');
  const script = `require('fs').appendFileSync(process.env.MARK, 'pid ' + process.pid + '\\n'); process.on('SIGTERM', () => require('fs').appendFileSync(process.env.MARK, 'term\\n')); setInterval(() => {}, 1000);`;
  await call(cluster, 'POST', PODS, {
    metadata: { name: 'stubborn' },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'c',
          image: 'example/toolbox:1',
          command: ['node', '-e', script],
          env: [{ name: 'MARK', value: marks }],
          lifecycle: {
            preStop: {
              exec: {
                command: ['node', '-e', "require('fs').appendFileSync(process.env.MARK, 'prestop\\n')"],
              },
            },
          },
        },
      ],
    },
  });
  const pid = await eventually(async () => {
    const m = /pid (\d+)/.exec(existsSync(marks) ? readFileSync(marks, 'utf8') : '');
    return m === null ? undefined : Number(m[1]);
  }, 'the container to start');
  const deleting = await call(cluster, 'DELETE', `${PODS}/stubborn`);
  assert.ok(deleting.body.metadata?.deletionTimestamp, 'a running pod is deleted gracefully');
  assert.equal((await call(cluster, 'GET', `${PODS}/stubborn`)).status, 200);
  await eventually(
    async () => ((await call(cluster, 'GET', `${PODS}/stubborn`)).status === 404 ? true : undefined),
    'pod removed',
  );
  assert.deepEqual(readFileSync(marks, 'utf8').split('\n').slice(1, 3), ['prestop', 'term']);
  assert.throws(() => process.kill(pid, 0), /ESRCH/, 'the process ignoring SIGTERM was killed');
});

test('a DaemonSet runs one pod on the simulated node and reports it ready', async () => {
  const ds = {
    metadata: { name: 'agent' },
    spec: {
      selector: { matchLabels: { app: 'agent' } },
      template: {
        metadata: { labels: { app: 'agent' } },
        spec: {
          containers: [{ name: 'echo', image: 'echo:1', env: [{ name: 'HTTP_PORT', value: '3001' }] }],
        },
      },
    },
  };
  assert.equal((await call(cluster, 'POST', `/apis/apps/v1/namespaces/${NS}/daemonsets`, ds)).status, 201);
  const status = await eventually(async () => {
    const s = (await call(cluster, 'GET', `/apis/apps/v1/namespaces/${NS}/daemonsets/agent`)).body.status;
    return s?.numberReady === (1 as unknown) ? s : undefined;
  }, 'daemonset ready');
  assert.equal(status.desiredNumberScheduled, 1 as unknown);
  const pods = asList((await call(cluster, 'GET', `${PODS}?labelSelector=app%3Dagent`)).body.items);
  assert.equal(pods.length, 1);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type KubernetesPod, kubernetesFleetView, podProblem } from '../../src/cli/kubernetes-fleets.js';

const SELECTOR = { 'app.kubernetes.io/instance': 'proxy-team-eg' };

const deployment = {
  kind: 'Deployment',
  metadata: {
    name: 'proxy-team-eg',
    namespace: 'portico-gateway-system',
    labels: {
      'gateway.portico.io/owning-gateway-namespace': 'team',
      'gateway.portico.io/owning-gateway-name': 'eg',
    },
  },
  spec: { replicas: 2, selector: { matchLabels: SELECTOR } },
  status: { replicas: 2, readyReplicas: 1, updatedReplicas: 2, availableReplicas: 1 },
};

function pod(
  name: string,
  status: KubernetesPod['status'],
  namespace = 'portico-gateway-system',
): KubernetesPod {
  return { metadata: { name, namespace, labels: { ...SELECTOR, 'pod-template-hash': 'x' } }, status };
}

const running = pod('proxy-team-eg-a', {
  phase: 'Running',
  containerStatuses: [
    { name: 'proxy', ready: true, restartCount: 0, state: {} },
    { name: 'shutdown-manager', ready: true, restartCount: 0, state: {} },
  ],
});

const unschedulable = pod('proxy-team-eg-b', {
  phase: 'Pending',
  conditions: [
    {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: '0/1 nodes are available: 1 Insufficient cpu.',
    },
  ],
});

const crashing = pod('proxy-team-eg-c', {
  phase: 'Running',
  containerStatuses: [
    {
      name: 'proxy',
      ready: false,
      restartCount: 5,
      state: {
        waiting: { reason: 'CrashLoopBackOff', message: 'back-off 2m40s restarting failed container=proxy' },
      },
      lastState: { terminated: { reason: 'Error', exitCode: 1 } },
    },
  ],
});

test("a fleet's pods show why they do not serve, in the scheduler's and kubelet's words", () => {
  const other = pod('proxy-team-eg-elsewhere', running.status, 'team');
  const view = kubernetesFleetView(deployment, [running, unschedulable, crashing, other]);
  assert.equal(view.fleet, 'team/eg');
  assert.deepEqual(view.details, [
    ['Deployment', 'portico-gateway-system/proxy-team-eg'],
    ['Replicas', '1/2 ready, 2 up-to-date, 1 available'],
  ]);
  assert.deepEqual(view.proxies.header, ['POD', 'READY', 'STATUS', 'RESTARTS', 'PROBLEM']);
  assert.deepEqual(view.proxies.rows, [
    ['proxy-team-eg-a', '2/2', 'Running', '0', ''],
    ['proxy-team-eg-b', '0/0', 'Pending', '0', 'Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.'],
    [
      'proxy-team-eg-c',
      '0/1',
      'CrashLoopBackOff',
      '5',
      'proxy: back-off 2m40s restarting failed container=proxy',
    ],
  ]);
});

test('a container that restarted and is not ready says how it last ended; pods unreadable are said so', () => {
  const restarted = pod('p', {
    phase: 'Running',
    containerStatuses: [
      {
        name: 'proxy',
        ready: false,
        restartCount: 1,
        state: {},
        lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } },
      },
    ],
  });
  assert.equal(podProblem(restarted), 'proxy: last exit OOMKilled (code 137)');
  const view = kubernetesFleetView(deployment, undefined);
  assert.deepEqual(view.details.at(-1), ['Pods', 'not readable with this kubeconfig']);
  assert.deepEqual(view.proxies.rows, []);
});

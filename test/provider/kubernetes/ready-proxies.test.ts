import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EndpointSlice } from '../../../src/api/core.js';
import { nodesOnReadyPods, readyEndpointPods } from '../../../src/provider/kubernetes/ready-proxies.js';

type Endpoint = EndpointSlice['endpoints'][number];

function slice(
  namespace: string,
  service: string | undefined,
  endpoints: Endpoint[],
  name = service,
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${name}-x1`,
      generation: 1,
      namespace,
      labels: service === undefined ? {} : { 'kubernetes.io/service-name': service },
    },
    addressType: 'IPv4',
    endpoints,
    ports: [],
  } as EndpointSlice;
}

function endpoint(pod: string | undefined, ready?: boolean, kind = 'Pod'): Endpoint {
  return {
    addresses: ['10.244.0.9'],
    conditions: ready === undefined ? {} : { ready },
    ...(pod === undefined ? {} : { targetRef: { kind, name: pod, namespace: 'ns' } }),
  } as Endpoint;
}

test('ready endpoint pods of the Services asked for: absent ready counts as ready, not-ready and non-pod targets do not', () => {
  const pods = readyEndpointPods(
    [
      slice('sys', 'proxy-a', [endpoint('a-1', true), endpoint('a-2', false), endpoint('a-3')]),
      slice('sys', 'proxy-a', [endpoint('a-4', true)], 'proxy-a-second'),
      slice('sys', 'proxy-b', [endpoint(undefined, true), endpoint('b-1', true, 'Node')]),
      slice('sys', undefined, [endpoint('c-1', true)], 'unlabelled'),
      slice('other', 'proxy-a', [endpoint('o-1', true)]),
      slice('sys', 'not-asked-for', [endpoint('n-1', true)]),
    ],
    new Set(['sys/proxy-a', 'sys/proxy-b', 'other/proxy-a']),
  );
  assert.deepEqual(
    [...pods].map(([k, v]) => [k, [...v].sort()]),
    [
      ['sys/proxy-a', ['a-1', 'a-3', 'a-4']],
      ['other/proxy-a', ['o-1']],
    ],
  );
});

test('only nodes whose pod is a ready endpoint of their own fleet’s Service count', () => {
  const slices = [
    slice('sys', 'proxy-a', [endpoint('a-1', true), endpoint('a-2', false)]),
    slice('sys', 'proxy-b', [endpoint('b-1', true)]),
  ];
  const services: Record<string, string> = { 'ns/a': 'sys/proxy-a', 'ns/b': 'sys/proxy-b' };
  const nodes = [
    { node: 'a-1', fleet: 'ns/a' }, // ready
    { node: 'a-2', fleet: 'ns/a' }, // applied, but its pod is not Ready yet
    { node: 'b-1', fleet: 'ns/a' }, // a ready pod, but of another fleet's Service
    { node: 'b-1', fleet: 'ns/b' }, // ready
    { node: 'x-1', fleet: 'ns/unknown' }, // a fleet with no infrastructure
  ];
  assert.deepEqual(
    nodesOnReadyPods(nodes, (fleet) => services[fleet], slices),
    [
      { node: 'a-1', fleet: 'ns/a' },
      { node: 'b-1', fleet: 'ns/b' },
    ],
  );
  assert.deepEqual(
    nodesOnReadyPods(nodes, (fleet) => services[fleet], []),
    [],
  );
});

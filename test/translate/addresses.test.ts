// A Gateway's spec.addresses against its fleet's addresses (GEP-5093): each entry weighed alone, an address
// given once, unmet entries said, routability reported on every address.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROUTABILITY_PATTERN } from '../../src/api/gateway.js';
import { assignAddresses, SENTINEL_ROUTABILITY } from '../../src/translate/addresses.js';
import type { GatewayAddress } from '../../src/translate/types.js';

// A LoadBalancer Service: its load balancer's address, and its cluster IP for those who ask for it.
const balanced: GatewayAddress[] = [
  { type: 'IPAddress', value: '203.0.113.10' },
  { type: 'IPAddress', value: '10.96.0.42', routability: 'Cluster', onRequestOnly: true },
];
// A ClusterIP Service: its cluster IP is its address.
const clusterOnly: GatewayAddress[] = [{ type: 'IPAddress', value: '10.96.0.7', routability: 'Cluster' }];
// A standalone fleet: a loopback address, with no reachability promise.
const loopback: GatewayAddress[] = [{ type: 'IPAddress', value: '127.0.10.3' }];

test('no entries: the fleet gives its own addresses, each with its routability said', () => {
  assert.deepEqual(assignAddresses([], balanced), {
    addresses: [{ type: 'IPAddress', value: '203.0.113.10', routability: '' }],
    unmet: [],
  });
  assert.deepEqual(assignAddresses([], clusterOnly).addresses, [
    { type: 'IPAddress', value: '10.96.0.7', routability: 'Cluster' },
  ]);
});

test('an empty and a Cluster entry get one address each, whatever their order', () => {
  for (const requests of [
    [{ routability: 'Cluster' }, { type: 'IPAddress' }],
    [{ type: 'IPAddress', routability: '' }, { routability: 'Cluster' }],
  ]) {
    const a = assignAddresses(requests, balanced);
    assert.deepEqual(a.unmet, []);
    assert.deepEqual(a.addresses.map((x) => `${x.value} ${x.routability}`).sort(), [
      '10.96.0.42 Cluster',
      '203.0.113.10 ',
    ]);
  }
});

test('an empty entry on a cluster-only fleet is reported Cluster, as the address is one', () => {
  assert.deepEqual(assignAddresses([{}], clusterOnly).addresses, [
    { type: 'IPAddress', value: '10.96.0.7', routability: 'Cluster' },
  ]);
});

test('the sentinel is met by any address and reported as asked', () => {
  const a = assignAddresses([{ routability: SENTINEL_ROUTABILITY }], loopback);
  assert.deepEqual(a.addresses, [
    { type: 'IPAddress', value: '127.0.10.3', routability: SENTINEL_ROUTABILITY },
  ]);
  assert.deepEqual(a.unmet, []);
});

test('a Cluster entry is never met by another kind of address', () => {
  const a = assignAddresses([{ routability: 'Cluster' }], loopback);
  assert.deepEqual(a.addresses, []);
  assert.equal(a.unmet.length, 1);
  assert.match(a.unmet[0]!.why, /no address of the fleet is an address \(Cluster\): it has 127\.0\.10\.3/);
});

test('a Cluster entry by value outside what the fleet has is unmet; a satisfiable one beside it is met', () => {
  const a = assignAddresses(
    [{ routability: 'Cluster', value: '192.0.2.1' }, { type: 'IPAddress' }],
    balanced,
  );
  assert.deepEqual(a.addresses, [{ type: 'IPAddress', value: '203.0.113.10', routability: '' }]);
  assert.deepEqual(
    a.unmet.map((u) => [u.index, u.byValue]),
    [[0, false]],
  );
  assert.deepEqual(assignAddresses([{ value: '192.0.2.1' }], balanced).unmet[0]?.byValue, true);
  const exact = assignAddresses([{ routability: 'Cluster', value: '10.96.0.42' }], balanced);
  assert.deepEqual(exact.addresses, [{ type: 'IPAddress', value: '10.96.0.42', routability: 'Cluster' }]);
});

test('an address serves one entry only: two Cluster entries on one cluster IP meet one', () => {
  const a = assignAddresses([{ routability: 'Cluster' }, { routability: 'Cluster' }], clusterOnly);
  assert.equal(a.addresses.length, 1);
  assert.deepEqual(
    a.unmet.map((u) => u.index),
    [1],
  );
});

test('an entry by value takes its address first, so a looser entry does not take it', () => {
  const two: GatewayAddress[] = [
    { type: 'IPAddress', value: '203.0.113.10' },
    { type: 'IPAddress', value: '203.0.113.11' },
  ];
  const a = assignAddresses([{}, { value: '203.0.113.10' }], two);
  assert.deepEqual(
    a.addresses.map((x) => x.value),
    ['203.0.113.11', '203.0.113.10'],
  );
});

test('unknown prefixed routabilities and other testing.x-k8s.io values are unmet, said why', () => {
  for (const routability of ['example.com/CorpWan', 'testing.x-k8s.io/other']) {
    const a = assignAddresses([{ routability }], balanced);
    assert.deepEqual(a.addresses, []);
    assert.match(a.unmet[0]!.why, new RegExp(`routability ${routability} is not supported`));
  }
});

test('the routability pattern is the CRD rule: empty, Cluster, or a DNS prefix other than k8s.io', () => {
  const pattern = new RegExp(ROUTABILITY_PATTERN);
  for (const ok of ['', 'Cluster', 'example.com/CorpWan', SENTINEL_ROUTABILITY, 'a/b/c'])
    assert.ok(pattern.test(ok), ok);
  for (const bad of [
    'Public',
    'cluster',
    'k8s.io/value',
    'example.k8s.io/value',
    'gateway.networking.k8s.io/value',
    'Example.com/x',
    'example.com/',
    '/x',
  ])
    assert.ok(!pattern.test(bad), bad);
});

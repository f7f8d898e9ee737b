// A fleet's Gateway addresses come from its Service: the load balancer's ingress, or, for the ClusterIP and
// NodePort types a DataPlaneProxy may choose, the cluster IPs (else such a Gateway would never be Programmed).
// Cluster IPs are routability Cluster; a load-balanced Service's are given only to Gateways asking for them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COMMON_INFRA_LABELS } from '../../../src/ir/fleet-infra.js';
import { addressesOfService } from '../../../src/provider/kubernetes/cluster-source.js';

const metadata = { name: 'proxy-a-1234abcd', labels: { ...COMMON_INFRA_LABELS } };

test('a LoadBalancer Service: its ingress IPs and host names, then its cluster IP on request only', () => {
  const spec = { type: 'LoadBalancer', clusterIP: '10.96.0.7' };
  const clusterIP = { type: 'IPAddress', value: '10.96.0.7', routability: 'Cluster', onRequestOnly: true };
  assert.deepEqual(addressesOfService({ metadata, spec, status: {} }), [clusterIP]);
  const status = { loadBalancer: { ingress: [{ ip: '203.0.113.9' }, { hostname: 'lb.example.com' }] } };
  assert.deepEqual(addressesOfService({ metadata, spec, status }), [
    { type: 'IPAddress', value: '203.0.113.9' },
    { type: 'Hostname', value: 'lb.example.com' },
    clusterIP,
  ]);
});

test('ClusterIP and NodePort Services: their cluster IPs (both families), never a headless None', () => {
  for (const type of ['ClusterIP', 'NodePort']) {
    const spec = { type, clusterIP: '10.96.0.7', clusterIPs: ['10.96.0.7', 'fd00::7'] };
    assert.deepEqual(addressesOfService({ metadata, spec }), [
      { type: 'IPAddress', value: '10.96.0.7', routability: 'Cluster' },
      { type: 'IPAddress', value: 'fd00::7', routability: 'Cluster' },
    ]);
  }
  assert.deepEqual(addressesOfService({ metadata, spec: { type: 'ClusterIP', clusterIP: '10.96.0.8' } }), [
    { type: 'IPAddress', value: '10.96.0.8', routability: 'Cluster' },
  ]);
  assert.deepEqual(addressesOfService({ metadata, spec: { type: 'ClusterIP', clusterIP: 'None' } }), []);
});

test('a Service Portico does not manage gives no address', () => {
  const spec = { type: 'ClusterIP', clusterIP: '10.96.0.7' };
  assert.deepEqual(addressesOfService({ metadata: { name: 'x', labels: {} }, spec }), []);
});

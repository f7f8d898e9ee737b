// What the Gateway API experimental channel's Gateway CRD lets through, on a real API server. With it installed,
// the class claims GatewayAddressRoutability(+Cluster); a Gateway asking only for a Cluster address gets a
// ClusterIP Service and its cluster IP, said Cluster; one asking a Cluster address by a value in the Service CIDR
// gets exactly it; one asking a Cluster value outside it beside an empty entry is Programmed at its load
// balancer's address and AddressesAssigned=False/PartiallyAssigned. A listener's pre-routing ExternalAuth filter
// (GEP-5224) asks an authorization service in the cluster before any route. The standard CRD is put back at the
// end (the experimental one is a superset, so nothing else notices it meanwhile), and with it the safe-upgrades
// policy binding the switch needs away.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import { fleetInfraName } from '../../../../src/ir/fleet-infra.js';
import { type GatewayApiChannel, installGatewayApiChannel } from '../../../cluster/gateway-api-channel.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { httpRequest } from '../../../support/http.js';
import { AUTHORIZER_PORT, authorizer } from '../authorizer.js';
import { E2E_SKIP } from '../install.js';
import {
  apply,
  condition,
  echoNamespace,
  gatewayClass,
  gatewayStatus,
  get,
  programmedAddress,
  route,
} from '../traffic.js';

const NS = 'experimental-channel';
const GATEWAYS_CRD = 'gateway.networking.k8s.io_gateways.yaml';
// The controller reads the CRDs every 30 s; the node is shared with another test sequence.
const WAIT_MS = 120_000;
let cluster: Cluster;
let system: string;

export async function setup(c: Cluster, systemNamespace: string): Promise<void> {
  cluster = c;
  system = systemNamespace;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  await authorizer(cluster, NS, 'authz');
}

/** Installs the Gateway CRD of `channel` (the others stay standard: the experimental one is a superset). */
function gatewayCrd(channel: GatewayApiChannel): Promise<void> {
  return installGatewayApiChannel(cluster, channel, [GATEWAYS_CRD]);
}

function claims(feature: string, wanted: boolean): Promise<true> {
  return eventually(
    async () => {
      const r = await call(cluster, 'GET', '/apis/gateway.networking.k8s.io/v1/gatewayclasses/portico');
      const names = asList(r.body.status?.supportedFeatures).map((f) => String(f.name));
      return names.includes(feature) === wanted ? true : undefined;
    },
    `GatewayClass portico ${wanted ? 'claims' : 'does not claim'} ${feature}`,
    WAIT_MS,
    500,
  );
}

async function addressGateway(name: string, addresses: Record<string, string>[]): Promise<void> {
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: NS },
    spec: {
      gatewayClassName: 'portico',
      addresses,
      listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }],
    },
  } as never);
}

/** The Gateway once its AddressesAssigned condition has `reason` (and, when asked, Programmed=True). */
function assigned(name: string, reason: string, programmed: boolean): Promise<Loose> {
  return eventually(
    async () => {
      const gw = await gatewayStatus(cluster, NS, name);
      if (condition(gw, 'AddressesAssigned')?.reason !== reason) return undefined;
      return !programmed || condition(gw, 'Programmed')?.status === 'True' ? gw : undefined;
    },
    `Gateway ${NS}/${name} AddressesAssigned ${reason}`,
    WAIT_MS,
    500,
  );
}

async function fleetService(name: string): Promise<Loose> {
  const service = fleetInfraName(`${NS}/${name}`);
  return (await call(cluster, 'GET', `/api/v1/namespaces/${system}/services/${service}`)).body;
}

/** An address of the cluster's first Service CIDR that nothing is likely to hold (far from the start). */
async function freeServiceAddress(): Promise<string> {
  const r = await call(cluster, 'GET', '/apis/networking.k8s.io/v1/servicecidrs');
  const cidr = asList(asList(r.body.items)[0]?.spec?.cidrs)
    .map(String)
    .find((c) => c.includes('.'));
  assert.ok(cidr !== undefined, 'the cluster has an IPv4 Service CIDR');
  const [a, b] = cidr.split('.');
  return `${a}.${b}.200.77`;
}

/** A listener whose ExternalAuth filter refuses before any route, and lets an allowed request through. */
async function listenerFilters(): Promise<void> {
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'filtered', namespace: NS },
    spec: {
      gatewayClassName: 'portico',
      listeners: [
        {
          name: 'http',
          port: 80,
          protocol: 'HTTP',
          filters: {
            requests: [
              {
                type: 'ExternalAuth',
                externalAuth: {
                  protocol: 'HTTP',
                  backendRef: { name: 'authz', port: AUTHORIZER_PORT },
                  http: {},
                },
              },
            ],
          },
        },
      ],
    },
  } as never);
  await route(cluster, NS, 'filtered', { namespace: NS, name: 'filtered' }, 'lf.example.com', 'echo');
  const address = await programmedAddress(cluster, NS, 'filtered');
  const gw = await gatewayStatus(cluster, NS, 'filtered');
  assert.ok(asList(gw.spec?.listeners)[0]?.filters !== undefined, 'the experimental CRD kept the filters');
  // Refused before routing: the route exists, yet a request without a good token never reaches it.
  const refused = await eventually(
    async () => {
      const r = await get(address, 80, 'lf.example.com');
      return r.status === 401 ? r : undefined;
    },
    'a request without a token refused by the listener filter',
    WAIT_MS,
    500,
  );
  assert.equal(refused.headers['www-authenticate'], 'Bearer');
  const ok = await httpRequest(80, '/', {
    address,
    host: 'lf.example.com',
    headers: { authorization: 'Bearer good' },
    timeoutMs: 5000,
  });
  assert.equal(ok.status, 200);
}

test('the experimental Gateway CRD: Cluster addresses by scope and by value, partial assignment, listener filters', {
  skip: E2E_SKIP,
}, async () => {
  // Over the standard CRD (read as the controller started): not claimed.
  await claims('GatewayAddressRoutability', false);
  await gatewayCrd('experimental');
  try {
    await claims('GatewayAddressRoutabilityCluster', true);

    await addressGateway('internal', [{ type: 'IPAddress', routability: 'Cluster' }]);
    const internal = await assigned('internal', 'AddressesAssigned', true);
    const service = await fleetService('internal');
    assert.equal(service.spec?.type, 'ClusterIP', 'nothing outside the cluster reaches it');
    assert.deepEqual(
      asList(internal.status?.addresses).map((a) => [a.value, a.routability]),
      [[service.spec?.clusterIP, 'Cluster']],
    );

    const wanted = await freeServiceAddress();
    await addressGateway('pinned', [{ type: 'IPAddress', routability: 'Cluster', value: wanted }]);
    const pinned = await assigned('pinned', 'AddressesAssigned', true);
    assert.equal((await fleetService('pinned')).spec?.clusterIP, wanted);
    assert.deepEqual(
      asList(pinned.status?.addresses).map((a) => [a.value, a.routability]),
      [[wanted, 'Cluster']],
    );

    // 192.0.2.1 is in no Service CIDR: that entry is unmet, the empty one is met by the load balancer.
    await addressGateway('partial', [
      { type: 'IPAddress' },
      { type: 'IPAddress', routability: 'Cluster', value: '192.0.2.1' },
    ]);
    const partial = await assigned('partial', 'PartiallyAssigned', true);
    assert.match(
      String(condition(partial, 'AddressesAssigned')?.message),
      /spec\.addresses\[1\].*192\.0\.2\.1/,
    );
    const addresses = asList(partial.status?.addresses);
    assert.equal(addresses.length, 1);
    assert.equal(addresses[0]?.routability, '');
    assert.notEqual((await fleetService('partial')).spec?.clusterIP, '192.0.2.1');

    await listenerFilters();
  } finally {
    for (const name of ['internal', 'pinned', 'partial', 'filtered'])
      cluster.kubectl(['delete', 'gateway', '-n', NS, name, '--ignore-not-found', '--wait=false']);
    await gatewayCrd('standard');
  }
});

// A small standalone controller state: two classes, Gateways in two namespaces, routes, one fleet with a key.
import { FLEET_CONFIG_SCHEMA_VERSION } from '../../../src/ir/fleet-config.js';
import type { AdminState, ResourceObject } from '../../../src/provider/standalone/admin-state.js';

export const FIXTURE_NOW = Date.parse('2026-03-01T12:00:00Z');
const minutesAgo = (m: number): string => new Date(FIXTURE_NOW - m * 60_000).toISOString();
const condition = (type: string, status: string) => ({
  type,
  status,
  reason: status === 'True' ? type : 'Pending',
  message: '',
  observedGeneration: 1,
  lastTransitionTime: minutesAgo(1),
});

const GROUP = 'gateway.networking.k8s.io/v1';

export const FIXTURE_RESOURCES: ResourceObject[] = [
  {
    apiVersion: GROUP,
    kind: 'GatewayClass',
    metadata: { name: 'eg', creationTimestamp: minutesAgo(300), generation: 1 },
    spec: { controllerName: 'gateway.portico.io/gatewayclass-controller', description: 'the default class' },
    status: { conditions: [condition('Accepted', 'True')] },
  },
  {
    apiVersion: GROUP,
    kind: 'GatewayClass',
    metadata: { name: 'other', creationTimestamp: minutesAgo(2), generation: 1 },
    spec: { controllerName: 'example.com/other' },
  },
  {
    apiVersion: GROUP,
    kind: 'Gateway',
    metadata: { name: 'eg', namespace: 'default', creationTimestamp: minutesAgo(45), generation: 1 },
    spec: { gatewayClassName: 'eg', listeners: [{ name: 'http', protocol: 'HTTP', port: 8080 }] },
    status: {
      addresses: [{ type: 'IPAddress', value: '127.0.1.1' }],
      conditions: [condition('Accepted', 'True'), condition('Programmed', 'True')],
    },
  },
  {
    apiVersion: GROUP,
    kind: 'Gateway',
    metadata: { name: 'web', namespace: 'team-a', creationTimestamp: minutesAgo(3), generation: 1 },
    spec: { gatewayClassName: 'eg', listeners: [{ name: 'http', protocol: 'HTTP', port: 8080 }] },
    status: { conditions: [condition('Accepted', 'True'), condition('Programmed', 'False')] },
  },
  {
    apiVersion: GROUP,
    kind: 'HTTPRoute',
    metadata: { name: 'backend', namespace: 'default', creationTimestamp: minutesAgo(44), generation: 2 },
    spec: {
      parentRefs: [{ name: 'eg' }, { name: 'shared', namespace: 'infra', sectionName: 'https' }],
      hostnames: ['www.example.com', 'api.example.com'],
    },
    status: {
      parents: [
        {
          parentRef: { name: 'eg' },
          controllerName: 'gateway.portico.io/gatewayclass-controller',
          conditions: [condition('Accepted', 'True'), condition('ResolvedRefs', 'False')],
        },
      ],
    },
  },
  {
    apiVersion: GROUP,
    kind: 'HTTPRoute',
    metadata: { name: 'catch-all', namespace: 'default', creationTimestamp: minutesAgo(1), generation: 1 },
    spec: { parentRefs: [{ name: 'eg' }] },
  },
  {
    apiVersion: GROUP,
    kind: 'GRPCRoute',
    metadata: { name: 'echo', namespace: 'default', creationTimestamp: minutesAgo(30), generation: 1 },
    spec: { parentRefs: [{ name: 'eg' }], hostnames: ['grpc.example.com'] },
  },
];

export const FIXTURE_PRIVATE_KEY = '-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n';

/** A TLS Secret as a file holds it: its key in `data` (base64) and, once more, in `stringData`. */
export const FIXTURE_SECRET: ResourceObject & {
  type: string;
  data: Record<string, string>;
  stringData: Record<string, string>;
} = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'tls', namespace: 'default', creationTimestamp: minutesAgo(50), generation: 1 },
  type: 'kubernetes.io/tls',
  data: {
    'tls.crt': Buffer.from('-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n').toString(
      'base64',
    ),
    'tls.key': Buffer.from(FIXTURE_PRIVATE_KEY).toString('base64'),
  },
  stringData: { 'extra.key': FIXTURE_PRIVATE_KEY },
};

export function fixtureState(ready = true, errors: AdminState['errors'] = []): AdminState {
  return {
    ready,
    errors,
    resources: [...FIXTURE_RESOURCES, FIXTURE_SECRET],
    fleets: [
      {
        fleet: 'default/eg',
        address: '127.0.1.1',
        version: '3',
        nodes: [{ node: 'proxy-default-eg-e41e7b31', appliedVersion: '3' }],
        process: { pid: 4242, state: 'running', restarts: 0 },
        config: {
          schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
          fleet: 'default/eg',
          gateways: [{ name: 'default/eg', generation: 1 }],
          listeners: [],
          virtualHosts: [],
          clusters: [],
          endpoints: [],
          policies: [],
          secrets: [
            {
              name: 'default/tls',
              certificatePem: '-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n',
              privateKeyPem: FIXTURE_PRIVATE_KEY,
            },
          ],
        },
      },
    ],
  };
}

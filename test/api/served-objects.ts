// One object of every kind Portico watches, in the JSON an API server serves for it: written by kubectl
// (client-side apply, with its last-applied annotation), server-side apply or helm (managedFields, release
// labels), with server-set metadata and, where the kind has one, a status, and with every optional field of
// the upstream schema that Portico reads set. Tests derive their null and absent variants from these.

const TIME = '2026-11-23T10:00:00Z';

function metadata(name: string, namespace: string | undefined, extra: Record<string, unknown> = {}) {
  return {
    name,
    ...(namespace === undefined ? {} : { namespace }),
    uid: '2f0c3c1e-5b7a-4a35-9d0b-6a1b2c3d4e5f',
    resourceVersion: '4711',
    generation: 2,
    creationTimestamp: TIME,
    labels: { 'app.kubernetes.io/managed-by': 'Helm', team: 'edge' },
    annotations: {
      'meta.helm.sh/release-name': 'edge',
      // What `kubectl apply` records: client-side output, whose creationTimestamp is null.
      'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({
        metadata: { name, namespace, creationTimestamp: null },
      }),
    },
    managedFields: [
      {
        manager: 'kubectl',
        operation: 'Apply',
        apiVersion: 'v1',
        time: TIME,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:labels': { 'f:team': {} } } },
      },
      {
        manager: 'portico-gateway',
        operation: 'Update',
        apiVersion: 'v1',
        time: TIME,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:status': {} },
        subresource: 'status',
      },
    ],
    ...extra,
  };
}

const CONDITIONS = [
  {
    type: 'Accepted',
    status: 'True',
    reason: 'Accepted',
    message: 'Accepted',
    observedGeneration: 2,
    lastTransitionTime: TIME,
  },
];

export const GATEWAY_CLASS = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'GatewayClass',
  metadata: metadata('portico', undefined),
  spec: {
    controllerName: 'gateway.portico.io/gatewayclass-controller',
    parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', name: 'merged', namespace: 'edge' },
    description: 'the edge class',
  },
  status: { conditions: CONDITIONS, supportedFeatures: [{ name: 'Gateway' }] },
};

export const GATEWAY = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: metadata('eg', 'edge'),
  spec: {
    gatewayClassName: 'portico',
    listeners: [
      {
        name: 'http',
        hostname: 'www.example.com',
        port: 80,
        protocol: 'HTTP',
        allowedRoutes: {
          namespaces: {
            from: 'Selector',
            selector: {
              matchLabels: { team: 'edge' },
              matchExpressions: [{ key: 'tier', operator: 'In', values: ['web'] }],
            },
          },
          kinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
        },
      },
      {
        name: 'https',
        port: 443,
        protocol: 'HTTPS',
        tls: {
          mode: 'Terminate',
          certificateRefs: [{ group: '', kind: 'Secret', name: 'www-cert', namespace: 'edge' }],
          options: { 'example.com/cipher-suites': 'modern' },
        },
        allowedRoutes: { namespaces: { from: 'Same' } },
      },
    ],
    addresses: [{ type: 'IPAddress', value: '10.0.0.1' }],
    infrastructure: { labels: { cost: 'edge' }, annotations: { note: 'x' } },
    allowedListeners: {
      namespaces: { from: 'Selector', selector: { matchLabels: { team: 'edge' } } },
    },
  },
  status: {
    addresses: [{ type: 'IPAddress', value: '10.0.0.1' }],
    conditions: CONDITIONS,
    listeners: [
      {
        name: 'http',
        supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
        attachedRoutes: 1,
        conditions: CONDITIONS,
      },
    ],
  },
};

export const LISTENER_SET = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'ListenerSet',
  metadata: metadata('team-a', 'edge'),
  spec: {
    parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'eg', namespace: 'edge' },
    listeners: [
      {
        name: 'team-a',
        hostname: 'a.example.com',
        port: 8443,
        protocol: 'HTTPS',
        tls: {
          mode: 'Terminate',
          certificateRefs: [{ group: '', kind: 'Secret', name: 'www-cert', namespace: 'edge' }],
          options: { 'example.com/cipher-suites': 'modern' },
        },
        allowedRoutes: {
          namespaces: { from: 'Same' },
          kinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
        },
      },
    ],
  },
  status: {
    conditions: CONDITIONS,
    listeners: [
      {
        name: 'team-a',
        supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
        attachedRoutes: 0,
        conditions: CONDITIONS,
      },
    ],
  },
};

export const HTTP_ROUTE = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: metadata('web', 'edge'),
  spec: {
    parentRefs: [
      {
        group: 'gateway.networking.k8s.io',
        kind: 'Gateway',
        namespace: 'edge',
        name: 'eg',
        sectionName: 'http',
        port: 80,
      },
    ],
    hostnames: ['www.example.com'],
    rules: [
      {
        name: 'api',
        matches: [
          {
            path: { type: 'PathPrefix', value: '/api' },
            headers: [{ type: 'Exact', name: 'x-env', value: 'prod' }],
            queryParams: [{ type: 'Exact', name: 'v', value: '2' }],
            method: 'GET',
          },
        ],
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: {
              set: [{ name: 'x-a', value: '1' }],
              add: [{ name: 'x-b', value: '2' }],
              remove: ['x-c'],
            },
          },
        ],
        backendRefs: [
          {
            group: '',
            kind: 'Service',
            name: 'api',
            namespace: 'edge',
            port: 8080,
            weight: 3,
            filters: [
              {
                type: 'ResponseHeaderModifier',
                responseHeaderModifier: { set: [{ name: 'x-d', value: '4' }] },
              },
            ],
          },
        ],
        timeouts: { request: '10s', backendRequest: '5s' },
      },
    ],
  },
  status: {
    parents: [
      {
        parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'eg' },
        controllerName: 'gateway.portico.io/gatewayclass-controller',
        conditions: CONDITIONS,
      },
    ],
  },
};

export const GRPC_ROUTE = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'GRPCRoute',
  metadata: metadata('echo', 'edge'),
  spec: {
    parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'eg', sectionName: 'http' }],
    hostnames: ['grpc.example.com'],
    rules: [
      {
        name: 'say',
        matches: [
          {
            method: { type: 'Exact', service: 'echo.Echo', method: 'Say' },
            headers: [{ type: 'Exact', name: 'x-env', value: 'prod' }],
          },
        ],
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: { set: [{ name: 'x-a', value: '1' }], add: [], remove: ['x-c'] },
          },
        ],
        backendRefs: [
          {
            group: '',
            kind: 'Service',
            name: 'echo',
            namespace: 'edge',
            port: 8080,
            weight: 2,
            filters: [
              {
                type: 'ResponseHeaderModifier',
                responseHeaderModifier: { set: [{ name: 'x-d', value: '4' }] },
              },
            ],
          },
        ],
      },
    ],
  },
  status: {
    parents: [
      {
        parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'eg' },
        controllerName: 'gateway.portico.io/gatewayclass-controller',
        conditions: CONDITIONS,
      },
    ],
  },
};

export const REFERENCE_GRANT = {
  apiVersion: 'gateway.networking.k8s.io/v1beta1',
  kind: 'ReferenceGrant',
  metadata: metadata('from-edge', 'backends'),
  spec: {
    from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'edge' }],
    to: [{ group: '', kind: 'Service', name: 'api' }],
  },
};

export const SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: metadata('proxy-edge-eg-1234abcd', 'portico-gateway-system', {
    ownerReferences: [{ apiVersion: 'v1', kind: 'Namespace', name: 'edge', uid: 'u' }],
    finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
  }),
  spec: {
    type: 'LoadBalancer',
    ports: [
      { name: 'http', protocol: 'TCP', appProtocol: 'http', port: 80, targetPort: 10080, nodePort: 31080 },
    ],
    selector: { 'app.kubernetes.io/name': 'portico-proxy' },
    clusterIP: '10.96.0.20',
    clusterIPs: ['10.96.0.20'],
    allocateLoadBalancerNodePorts: true,
    externalTrafficPolicy: 'Cluster',
    internalTrafficPolicy: 'Cluster',
    ipFamilies: ['IPv4'],
    ipFamilyPolicy: 'SingleStack',
    sessionAffinity: 'None',
  },
  status: { loadBalancer: { ingress: [{ ip: '127.0.2.1', ipMode: 'VIP' }] } },
};

export const ENDPOINT_SLICE = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: metadata('proxy-edge-eg-1234abcd-x7k2p', 'portico-gateway-system', {
    generateName: 'proxy-edge-eg-1234abcd-',
    labels: {
      'kubernetes.io/service-name': 'proxy-edge-eg-1234abcd',
      'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
    },
    annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': TIME },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'proxy-edge-eg-1234abcd', uid: 'u' }],
  }),
  addressType: 'IPv4',
  endpoints: [
    {
      addresses: ['10.244.0.7'],
      conditions: { ready: true, serving: true, terminating: false },
      hostname: 'proxy-0',
      nodeName: 'node-0',
      zone: 'zone-a',
      targetRef: { kind: 'Pod', namespace: 'portico-gateway-system', name: 'proxy-0', uid: 'u' },
      hints: { forZones: [{ name: 'zone-a' }] },
    },
  ],
  ports: [{ name: 'http', protocol: 'TCP', port: 10080, appProtocol: 'http' }],
};

export const SECRET = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: metadata('www-cert', 'edge'),
  type: 'kubernetes.io/tls',
  data: { 'tls.crt': 'Y2VydA==', 'tls.key': 'a2V5' },
  immutable: false,
};

export const NAMESPACE = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: metadata('edge', undefined, { labels: { 'kubernetes.io/metadata.name': 'edge' } }),
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Active' },
};

export const DATA_PLANE_PROXY = {
  apiVersion: 'gateway.portico.io/v1alpha1',
  kind: 'DataPlaneProxy',
  metadata: metadata('merged', 'edge'),
  spec: {
    mergeGateways: true,
    logLevel: 'warn',
    kubernetes: {
      deployment: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%' } } },
      horizontalPodAutoscaler: { minReplicas: 2, maxReplicas: 5 },
      podDisruptionBudget: { minAvailable: 1 },
      pod: { priorityClassName: 'high', terminationGracePeriodSeconds: 120 },
      container: { resources: { limits: { cpu: '1', memory: '512Mi' } } },
      service: { type: 'LoadBalancer', externalTrafficPolicy: 'Local' },
    },
  },
};

export const CLUSTER_TRUST_BUNDLE = {
  apiVersion: 'certificates.k8s.io/v1beta1',
  kind: 'ClusterTrustBundle',
  metadata: metadata('example.com:internal:v1', undefined),
  spec: {
    signerName: 'example.com/internal',
    trustBundle: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  },
};

/** Every watched kind's sample, by kind. */
export const SERVED_OBJECTS: Record<string, Record<string, unknown>> = {
  GatewayClass: GATEWAY_CLASS,
  Gateway: GATEWAY,
  ListenerSet: LISTENER_SET,
  HTTPRoute: HTTP_ROUTE,
  GRPCRoute: GRPC_ROUTE,
  ReferenceGrant: REFERENCE_GRANT,
  Service: SERVICE,
  EndpointSlice: ENDPOINT_SLICE,
  Secret: SECRET,
  Namespace: NAMESPACE,
  DataPlaneProxy: DATA_PLANE_PROXY,
  ClusterTrustBundle: CLUSTER_TRUST_BUNDLE,
};

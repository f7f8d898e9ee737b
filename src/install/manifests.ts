// Everything a cluster needs to run Portico, from one set of values: the DataPlaneProxy CRD, the controller's
// ServiceAccount and RBAC (DESIGN.md §5), its configuration, Deployment, Services and the certgen Job.
import { stringify } from 'yaml';
import type { InstallValues } from './values.js';

export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string };

const APP = 'portico-gateway';
const CONFIG_FILE = 'portico.yaml';
const CONFIG_DIR = '/etc/portico/config';
export const INFRA_MANAGER = 'gateway-helm-cluster-infra-manager';

const labels = { 'app.kubernetes.io/name': APP, 'app.kubernetes.io/managed-by': 'portico-install' };
const meta = (name: string, namespace?: string) =>
  namespace === undefined ? { name, labels } : { name, namespace, labels };

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
const READ = ['get', 'list', 'watch'];
const INFRA_VERBS = ['create', 'get', 'delete', 'deletecollection', 'patch'];

function dataPlaneProxyCrd(): Manifest {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'dataplaneproxies.gateway.portico.io', labels },
    spec: {
      group: 'gateway.portico.io',
      scope: 'Namespaced',
      names: {
        kind: 'DataPlaneProxy',
        listKind: 'DataPlaneProxyList',
        plural: 'dataplaneproxies',
        singular: 'dataplaneproxy',
      },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: {
                  type: 'object',
                  properties: { mergeGateways: { type: 'boolean' } },
                },
                status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          },
        },
      ],
    },
  };
}

/** Reading Gateway API and core kinds, writing Gateway API status. */
function readRules(scope: 'cluster' | 'namespaced' | 'all'): Rule[] {
  const gw = 'gateway.networking.k8s.io';
  const cluster: Rule[] = [
    { apiGroups: [gw], resources: ['gatewayclasses'], verbs: READ },
    { apiGroups: [gw], resources: ['gatewayclasses/status'], verbs: ['get', 'update', 'patch'] },
    { apiGroups: [''], resources: ['namespaces'], verbs: READ },
  ];
  const namespaced: Rule[] = [
    { apiGroups: [gw], resources: ['gateways', 'httproutes', 'referencegrants'], verbs: READ },
    {
      apiGroups: [gw],
      resources: ['gateways/status', 'httproutes/status'],
      verbs: ['get', 'update', 'patch'],
    },
    { apiGroups: [''], resources: ['services', 'secrets'], verbs: READ },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: READ },
    { apiGroups: ['gateway.portico.io'], resources: ['dataplaneproxies'], verbs: READ },
  ];
  if (scope === 'cluster') return cluster;
  if (scope === 'namespaced') return namespaced;
  return [...cluster, ...namespaced];
}

/** DESIGN.md §5, exactly. */
function infraManagerRules(): Rule[] {
  return [
    { apiGroups: [''], resources: ['serviceaccounts', 'services', 'configmaps'], verbs: INFRA_VERBS },
    { apiGroups: ['apps'], resources: ['deployments', 'daemonsets'], verbs: INFRA_VERBS },
    {
      apiGroups: ['autoscaling', 'policy'],
      resources: ['horizontalpodautoscalers', 'poddisruptionbudgets'],
      verbs: INFRA_VERBS,
    },
  ];
}

function binding(
  kind: 'RoleBinding' | 'ClusterRoleBinding',
  name: string,
  roleKind: string,
  roleName: string,
  v: InstallValues,
  namespace?: string,
): Manifest {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: meta(name, namespace),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: roleName },
    subjects: [{ kind: 'ServiceAccount', name: APP, namespace: v.namespace }],
  };
}

function role(kind: 'Role' | 'ClusterRole', name: string, rules: Rule[], namespace?: string): Manifest {
  return { apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: meta(name, namespace), rules };
}

function rbac(v: InstallValues): Manifest[] {
  const out: Manifest[] = [];
  const restricted = v.watchNamespaces.length > 0;
  const watched = [...new Set([...v.watchNamespaces, v.namespace])];
  // Cluster-scoped names carry the namespace, so tenant installs in several namespaces do not collide.
  const reader = `${APP}-${v.namespace}`;
  out.push(role('ClusterRole', reader, readRules(restricted ? 'cluster' : 'all')));
  out.push(binding('ClusterRoleBinding', reader, 'ClusterRole', reader, v));
  if (restricted) {
    for (const ns of watched) {
      out.push(role('Role', `${APP}-reader`, readRules('namespaced'), ns));
      out.push(binding('RoleBinding', `${APP}-reader`, 'Role', `${APP}-reader`, v, ns));
    }
  }
  // Its own namespace: leader lease, certificate Secrets, and (Controller Namespace Mode) the proxy fleets.
  const own: Rule[] = [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create'] },
    {
      apiGroups: [''],
      resources: ['serviceaccounts', 'services', 'configmaps'],
      verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete'],
    },
    {
      apiGroups: ['apps'],
      resources: ['deployments'],
      verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete'],
    },
  ];
  out.push(role('Role', APP, own, v.namespace));
  out.push(binding('RoleBinding', APP, 'Role', APP, v, v.namespace));
  if (v.deployType === 'GatewayNamespace') {
    const tokenReview: Rule = {
      apiGroups: ['authentication.k8s.io'],
      resources: ['tokenreviews'],
      verbs: ['create'],
    };
    if (restricted) {
      out.push(role('ClusterRole', INFRA_MANAGER, [tokenReview]));
      out.push(binding('ClusterRoleBinding', INFRA_MANAGER, 'ClusterRole', INFRA_MANAGER, v));
      for (const ns of v.watchNamespaces) {
        out.push(role('Role', INFRA_MANAGER, infraManagerRules(), ns));
        out.push(binding('RoleBinding', INFRA_MANAGER, 'Role', INFRA_MANAGER, v, ns));
      }
    } else {
      out.push(role('ClusterRole', INFRA_MANAGER, [...infraManagerRules(), tokenReview]));
      out.push(binding('ClusterRoleBinding', INFRA_MANAGER, 'ClusterRole', INFRA_MANAGER, v));
    }
  }
  return out;
}

function controllerConfig(v: InstallValues): string {
  const kubernetes: Record<string, unknown> = { deploy: { type: v.deployType } };
  if (v.watchNamespaces.length > 0) kubernetes.watch = { type: 'Namespaces', namespaces: v.watchNamespaces };
  else if (Object.keys(v.watchNamespaceSelector).length > 0) {
    kubernetes.watch = {
      type: 'NamespaceSelector',
      namespaceSelector: { matchLabels: v.watchNamespaceSelector },
    };
  }
  return stringify({
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'PorticoGateway',
    gateway: { controllerName: v.controllerName },
    provider: { type: 'Kubernetes', kubernetes },
  });
}

const POD_ENV = [
  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
];
const SECURITY = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

function controllerDeployment(v: InstallValues): Manifest {
  const selector = { 'app.kubernetes.io/name': APP, 'app.kubernetes.io/component': 'controller' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(APP, v.namespace),
    spec: {
      replicas: v.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: selector },
        spec: {
          serviceAccountName: APP,
          securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: 'controller',
              image: v.image,
              command: ['portico'],
              args: ['controller', '--config', `${CONFIG_DIR}/${CONFIG_FILE}`, '--proxy-image', v.image],
              env: POD_ENV,
              ports: [
                { name: 'discovery', containerPort: 18000, protocol: 'TCP' },
                { name: 'http', containerPort: 18001, protocol: 'TCP' },
                { name: 'metrics', containerPort: 19001, protocol: 'TCP' },
              ],
              readinessProbe: { httpGet: { path: '/readyz', port: 18001 }, periodSeconds: 5 },
              livenessProbe: { httpGet: { path: '/healthz', port: 18001 }, periodSeconds: 10 },
              resources: { requests: { cpu: '100m', memory: '128Mi' } },
              securityContext: SECURITY,
              volumeMounts: [{ name: 'config', mountPath: CONFIG_DIR, readOnly: true }],
            },
          ],
          volumes: [{ name: 'config', configMap: { name: `${APP}-config` } }],
        },
      },
    },
  };
}

function certgenJob(v: InstallValues): Manifest {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: meta(`${APP}-certgen`, v.namespace),
    spec: {
      backoffLimit: 6,
      ttlSecondsAfterFinished: 300,
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': APP, 'app.kubernetes.io/component': 'certgen' } },
        spec: {
          serviceAccountName: APP,
          restartPolicy: 'OnFailure',
          securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
          containers: [
            {
              name: 'certgen',
              image: v.image,
              command: ['portico'],
              args: ['certgen', '--kubernetes', '--namespace', v.namespace],
              resources: { requests: { cpu: '10m', memory: '32Mi' } },
              securityContext: SECURITY,
            },
          ],
        },
      },
    },
  };
}

function service(name: string, v: InstallValues, ports: { name: string; port: number }[]): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name, v.namespace),
    spec: {
      type: 'ClusterIP',
      selector: { 'app.kubernetes.io/name': APP, 'app.kubernetes.io/component': 'controller' },
      ports: ports.map((p) => ({ ...p, protocol: 'TCP', targetPort: p.port })),
    },
  };
}

export function renderInstall(v: InstallValues): Manifest[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: v.namespace, labels } },
    dataPlaneProxyCrd(),
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(APP, v.namespace) },
    ...rbac(v),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(`${APP}-config`, v.namespace),
      data: { [CONFIG_FILE]: controllerConfig(v) },
    },
    certgenJob(v),
    controllerDeployment(v),
    service(APP, v, [
      { name: 'grpc-discovery', port: 18000 },
      { name: 'http', port: 18001 },
    ]),
    service(`${APP}-metrics`, v, [{ name: 'metrics', port: 19001 }]),
  ];
}

export function formatManifests(manifests: Manifest[]): string {
  return manifests.map((m) => stringify(m)).join('---\n');
}

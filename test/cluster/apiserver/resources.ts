// The resource types the API server serves: built-in kinds plus whatever CRDs define at run time.

export interface ResourceType {
  group: string;
  version: string;
  /** Plural, lower case: `deployments`. */
  resource: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  /** `status`, `token`, ... */
  subresources: string[];
  shortNames: string[];
  /** True for kinds the strategic merge patch knows (built-in types). */
  builtin: boolean;
  /** Writes a stored key from group+resource, so several versions of one CRD share objects. */
  storageKey: string;
}

function builtin(
  group: string,
  version: string,
  kind: string,
  resource: string,
  namespaced: boolean,
  subresources: string[] = [],
  shortNames: string[] = [],
): ResourceType {
  return {
    group,
    version,
    resource,
    singular: kind.toLowerCase(),
    kind,
    listKind: `${kind}List`,
    namespaced,
    subresources,
    shortNames,
    builtin: true,
    storageKey: `${group}/${resource}`,
  };
}

export const BUILTIN_TYPES: readonly ResourceType[] = [
  builtin('', 'v1', 'Namespace', 'namespaces', false, ['status', 'finalize'], ['ns']),
  builtin('', 'v1', 'Service', 'services', true, ['status'], ['svc']),
  builtin('', 'v1', 'Pod', 'pods', true, ['status'], ['po']),
  builtin('', 'v1', 'ServiceAccount', 'serviceaccounts', true, ['token'], ['sa']),
  builtin('', 'v1', 'Secret', 'secrets', true),
  builtin('', 'v1', 'ConfigMap', 'configmaps', true, [], ['cm']),
  builtin('', 'v1', 'Event', 'events', true, [], ['ev']),
  builtin('', 'v1', 'Endpoints', 'endpoints', true, [], ['ep']),
  builtin('discovery.k8s.io', 'v1', 'EndpointSlice', 'endpointslices', true),
  builtin('apps', 'v1', 'Deployment', 'deployments', true, ['status'], ['deploy']),
  builtin('apps', 'v1', 'DaemonSet', 'daemonsets', true, ['status'], ['ds']),
  builtin(
    'autoscaling',
    'v2',
    'HorizontalPodAutoscaler',
    'horizontalpodautoscalers',
    true,
    ['status'],
    ['hpa'],
  ),
  builtin('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, ['status'], ['pdb']),
  builtin('coordination.k8s.io', 'v1', 'Lease', 'leases', true),
  builtin('events.k8s.io', 'v1', 'Event', 'events', true, [], ['ev']),
  builtin('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true),
  builtin('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true),
  builtin('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false),
  builtin('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
  builtin('authentication.k8s.io', 'v1', 'TokenReview', 'tokenreviews', false),
  builtin(
    'apiextensions.k8s.io',
    'v1',
    'CustomResourceDefinition',
    'customresourcedefinitions',
    false,
    ['status'],
    ['crd', 'crds'],
  ),
];

/** A built-in resource type by its plural name (`pods`); the simulator's own modules name only real ones. */
export function builtinType(resource: string): ResourceType {
  const type = BUILTIN_TYPES.find((t) => t.resource === resource);
  if (type === undefined) throw new Error(`no built-in resource type '${resource}'`);
  return type;
}

/** Kinds that only answer `create` (nothing is stored). */
export const CREATE_ONLY = new Set(['authentication.k8s.io/tokenreviews']);

export function apiVersionOf(t: ResourceType): string {
  return t.group === '' ? t.version : `${t.group}/${t.version}`;
}

export interface ResourceRegistry {
  all(): ResourceType[];
  find(group: string, version: string, resource: string): ResourceType | undefined;
  /** The type stored under `group/resource`, in its preferred (first registered) version. */
  byStorageKey(key: string): ResourceType | undefined;
  byKind(apiVersion: string, kind: string): ResourceType | undefined;
  add(types: ResourceType[]): void;
  removeStorageKey(key: string): void;
}

export function createRegistry(): ResourceRegistry {
  const types: ResourceType[] = [...BUILTIN_TYPES];
  return {
    all: () => [...types],
    find: (group, version, resource) =>
      types.find((t) => t.group === group && t.version === version && t.resource === resource),
    byStorageKey: (key) => types.find((t) => t.storageKey === key),
    byKind: (apiVersion, kind) => types.find((t) => apiVersionOf(t) === apiVersion && t.kind === kind),
    add(added) {
      for (const t of added) {
        const i = types.findIndex(
          (x) => x.group === t.group && x.version === t.version && x.resource === t.resource,
        );
        if (i >= 0) types[i] = t;
        else types.push(t);
      }
    },
    removeStorageKey(key) {
      for (let i = types.length - 1; i >= 0; i--) if (types[i]?.storageKey === key) types.splice(i, 1);
    },
  };
}

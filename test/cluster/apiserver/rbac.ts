// RBAC: Roles, ClusterRoles and their bindings decide what a non-admin user may do.
import type { UserInfo } from './authn.js';
import { arrayAt, isJsonObject, type KubeObject, objectAt, stringAt } from './object.js';
import type { Store } from './store.js';

export interface Attributes {
  verb: string;
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

interface Rule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function rulesOf(role: KubeObject | undefined): Rule[] {
  return arrayAt(role, 'rules')
    .filter(isJsonObject)
    .map((r) => ({
      verbs: strings(r.verbs),
      apiGroups: strings(r.apiGroups),
      resources: strings(r.resources),
      resourceNames: strings(r.resourceNames),
    }));
}

function ruleAllows(rule: Rule, a: Attributes): boolean {
  const resource = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  const verbOk = rule.verbs.includes('*') || rule.verbs.includes(a.verb);
  const groupOk = rule.apiGroups.includes('*') || rule.apiGroups.includes(a.group);
  const resourceOk =
    rule.resources.includes('*') ||
    rule.resources.includes(resource) ||
    (a.subresource !== '' && rule.resources.includes(`*/${a.subresource}`));
  const nameOk = rule.resourceNames.length === 0 || (a.name !== '' && rule.resourceNames.includes(a.name));
  return verbOk && groupOk && resourceOk && nameOk;
}

function subjectMatches(binding: KubeObject, user: UserInfo): boolean {
  return arrayAt(binding, 'subjects')
    .filter(isJsonObject)
    .some((s) => {
      const kind = s.kind;
      if (kind === 'User') return s.name === user.username;
      if (kind === 'Group') return typeof s.name === 'string' && user.groups.includes(s.name);
      if (kind === 'ServiceAccount') {
        return user.username === `system:serviceaccount:${String(s.namespace ?? '')}:${String(s.name ?? '')}`;
      }
      return false;
    });
}

function roleOf(store: Store, binding: KubeObject): KubeObject | undefined {
  const ref = objectAt(binding, 'roleRef');
  const name = stringAt(ref, 'name') ?? '';
  if (stringAt(ref, 'kind') === 'ClusterRole')
    return store.get('rbac.authorization.k8s.io/clusterroles', '', name);
  return store.get('rbac.authorization.k8s.io/roles', binding.metadata.namespace ?? '', name);
}

/** Every authenticated user may read discovery documents, as the default `system:discovery` role allows. */
export function allowedNonResource(user: UserInfo): boolean {
  return user.groups.includes('system:authenticated');
}

export function authorize(store: Store, user: UserInfo, a: Attributes): boolean {
  if (user.groups.includes('system:masters')) return true;
  const cluster = store
    .list('rbac.authorization.k8s.io/clusterrolebindings')
    .filter((b) => subjectMatches(b, user));
  for (const b of cluster) if (rulesOf(roleOf(store, b)).some((r) => ruleAllows(r, a))) return true;
  if (a.namespace === '') return false;
  const local = store
    .list('rbac.authorization.k8s.io/rolebindings', a.namespace)
    .filter((b) => subjectMatches(b, user));
  return local.some((b) => rulesOf(roleOf(store, b)).some((r) => ruleAllows(r, a)));
}

export function forbiddenMessage(user: UserInfo, a: Attributes): string {
  const what = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  const subject = a.name === '' ? what : `${what} "${a.name}"`;
  const scope = a.namespace === '' ? 'at the cluster scope' : `in the namespace "${a.namespace}"`;
  return `${subject} is forbidden: User "${user.username}" cannot ${a.verb} resource "${what}" in API group "${a.group}" ${scope}`;
}

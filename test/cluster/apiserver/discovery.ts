// Discovery documents: /api, /apis, /apis/<group>[/<version>], /version and minimal OpenAPI roots.
import type { JsonObject } from './object.js';
import type { ResourceRegistry, ResourceType } from './resources.js';

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** Kubernetes version priority: GA > beta > alpha, higher numbers first. */
function versionRank(v: string): [number, number, number] {
  const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
  if (m === null) return [3, 0, 0];
  const level = m[2] === undefined ? 0 : m[2] === 'beta' ? 1 : 2;
  return [level, -Number(m[1]), -Number(m[3] ?? 0)];
}

export function sortVersions(versions: string[]): string[] {
  return [...new Set(versions)].sort((a, b) => {
    const [x, y] = [versionRank(a), versionRank(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
}

function resourceEntries(t: ResourceType): JsonObject[] {
  const verbs = t.storageKey === 'authentication.k8s.io/tokenreviews' ? ['create'] : VERBS;
  const main: JsonObject = {
    name: t.resource,
    singularName: t.singular,
    namespaced: t.namespaced,
    kind: t.kind,
    verbs,
  };
  if (t.shortNames.length > 0) main.shortNames = t.shortNames;
  const subs = t.subresources.map((s): JsonObject => {
    if (s === 'token') {
      return {
        name: `${t.resource}/token`,
        singularName: '',
        namespaced: true,
        group: 'authentication.k8s.io',
        version: 'v1',
        kind: 'TokenRequest',
        verbs: ['create'],
      };
    }
    return {
      name: `${t.resource}/${s}`,
      singularName: '',
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: ['get', 'patch', 'update'],
    };
  });
  return [main, ...subs];
}

export interface DiscoveryAnswer {
  code: number;
  body: JsonObject;
}

function groupVersions(registry: ResourceRegistry): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const t of registry.all()) {
    if (t.group === '') continue;
    groups.set(t.group, [...(groups.get(t.group) ?? []), t.version]);
  }
  return groups;
}

function groupDocument(group: string, versions: string[]): JsonObject {
  const sorted = sortVersions(versions);
  const gv = (v: string) => ({ groupVersion: `${group}/${v}`, version: v });
  return { name: group, versions: sorted.map(gv), preferredVersion: gv(sorted[0] ?? '') };
}

/** Answers a discovery path, or undefined when the path is not a discovery document. */
export function discovery(
  path: string,
  registry: ResourceRegistry,
  serverAddress: string,
): DiscoveryAnswer | undefined {
  const parts = path.split('/').filter((p) => p !== '');
  if (path === '/version') {
    return {
      code: 200,
      body: {
        major: '1',
        minor: '32',
        gitVersion: 'v1.32.0-portico-sim',
        gitCommit: '',
        gitTreeState: 'clean',
        buildDate: '2026-01-01T00:00:00Z',
        goVersion: 'go1.23',
        compiler: 'gc',
        platform: 'linux/amd64',
      },
    };
  }
  if (path === '/api') {
    return {
      code: 200,
      body: {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
      },
    };
  }
  if (path === '/api/v1') {
    const resources = registry
      .all()
      .filter((t) => t.group === '')
      .flatMap(resourceEntries);
    return { code: 200, body: { kind: 'APIResourceList', groupVersion: 'v1', resources } };
  }
  if (path === '/apis') {
    const groups = [...groupVersions(registry)].map(([g, v]) => groupDocument(g, v));
    return { code: 200, body: { kind: 'APIGroupList', apiVersion: 'v1', groups } };
  }
  if (parts[0] === 'apis' && parts.length === 2) {
    const versions = groupVersions(registry).get(parts[1] ?? '');
    if (versions === undefined) return undefined;
    return {
      code: 200,
      body: { kind: 'APIGroup', apiVersion: 'v1', ...groupDocument(parts[1] ?? '', versions) },
    };
  }
  if (parts[0] === 'apis' && parts.length === 3) {
    const types = registry.all().filter((t) => t.group === parts[1] && t.version === parts[2]);
    if (types.length === 0) return undefined;
    return {
      code: 200,
      body: {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: `${parts[1]}/${parts[2]}`,
        resources: types.flatMap(resourceEntries),
      },
    };
  }
  return undefined;
}

// Turns a request path into (group, version, namespace, resource, name, subresource), as the real RequestInfo.
import type { ResourceRegistry, ResourceType } from './resources.js';

export interface RequestInfo {
  type: ResourceType;
  namespace: string;
  name: string;
  subresource: string;
}

export type ParsedPath =
  | { kind: 'resource'; info: RequestInfo }
  | { kind: 'unknown-resource'; group: string; version: string; resource: string }
  | { kind: 'non-resource' };

export function parseResourcePath(path: string, registry: ResourceRegistry): ParsedPath {
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    group = '';
    version = parts[1] ?? '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1] ?? '';
    version = parts[2] ?? '';
    rest = parts.slice(3);
  } else {
    return { kind: 'non-resource' };
  }
  let namespace = '';
  const nsSub =
    group === '' &&
    rest[0] === 'namespaces' &&
    rest.length === 3 &&
    (rest[2] === 'status' || rest[2] === 'finalize');
  if (rest[0] === 'namespaces' && rest.length >= 3 && !nsSub) {
    namespace = rest[1] ?? '';
    rest = rest.slice(2);
  }
  const [resource = '', name = '', subresource = ''] = rest;
  if (rest.length > 3) return { kind: 'unknown-resource', group, version, resource };
  const type = registry.find(group, version, resource);
  if (type === undefined || (namespace !== '' && !type.namespaced)) {
    return { kind: 'unknown-resource', group, version, resource };
  }
  if (type.namespaced && namespace === '' && name !== '')
    return { kind: 'unknown-resource', group, version, resource };
  return { kind: 'resource', info: { type, namespace, name, subresource } };
}

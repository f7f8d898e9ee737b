// Minimal OpenAPI v3 documents: one PATCH operation per kind advertising `fieldValidation`, which is what
// kubectl checks before it trusts the server to validate (so it skips client-side schema validation).
import { createHash } from 'node:crypto';
import type { JsonObject } from './object.js';
import type { ResourceRegistry, ResourceType } from './resources.js';

function gvPath(t: ResourceType): string {
  return t.group === '' ? `api/${t.version}` : `apis/${t.group}/${t.version}`;
}

function gvDocument(types: ResourceType[]): JsonObject {
  const paths: JsonObject = {};
  for (const t of types) {
    const ns = t.namespaced ? 'namespaces/{namespace}/' : '';
    paths[`/${gvPath(t)}/${ns}${t.resource}/{name}`] = {
      patch: {
        'x-kubernetes-group-version-kind': { group: t.group, version: t.version, kind: t.kind },
        parameters: [
          { name: 'fieldValidation', in: 'query', schema: { type: 'string', uniqueItems: true } },
          { name: 'fieldManager', in: 'query', schema: { type: 'string', uniqueItems: true } },
          { name: 'dryRun', in: 'query', schema: { type: 'string', uniqueItems: true } },
        ],
        responses: { '200': { description: 'OK' } },
      },
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.32.0' },
    paths,
    components: { schemas: {} },
  };
}

export function openapi(path: string, registry: ResourceRegistry): JsonObject | undefined {
  const groups = new Map<string, ResourceType[]>();
  for (const t of registry.all()) groups.set(gvPath(t), [...(groups.get(gvPath(t)) ?? []), t]);
  if (path === '/openapi/v3') {
    const paths: JsonObject = {};
    for (const [gv, types] of groups) {
      const hash = createHash('sha256')
        .update(JSON.stringify(gvDocument(types)))
        .digest('hex')
        .slice(0, 32);
      paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${hash}` };
    }
    return { paths };
  }
  if (path.startsWith('/openapi/v3/')) {
    const types = groups.get(path.slice('/openapi/v3/'.length));
    return types === undefined ? undefined : gvDocument(types);
  }
  return undefined;
}

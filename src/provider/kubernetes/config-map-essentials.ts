// What the controller keeps of a ConfigMap: a BackendTLSPolicy reads only its `ca.crt`, so of every ConfigMap
// (the API has no selector for "referenced by a policy") only that key and the identity are kept. A tenant's many
// or large ConfigMaps then cost a name each, and a change to any other key is no change at all.
import type { JsonObject } from './api-client.js';

const KEPT_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp'];

export function configMapEssentials(raw: JsonObject): JsonObject {
  const metadata = (raw.metadata ?? {}) as JsonObject;
  const keptMetadata: JsonObject = {};
  for (const key of KEPT_METADATA) if (metadata[key] !== undefined) keptMetadata[key] = metadata[key];
  const data = (raw.data ?? {}) as JsonObject;
  const out: JsonObject = {
    metadata: keptMetadata,
    data: typeof data['ca.crt'] === 'string' ? { 'ca.crt': data['ca.crt'] } : {},
  };
  if (raw.apiVersion !== undefined) out.apiVersion = raw.apiVersion;
  if (raw.kind !== undefined) out.kind = raw.kind;
  return out;
}

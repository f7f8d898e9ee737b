// What the controller keeps of a Secret: it lists only `kubernetes.io/tls` Secrets (a field selector, so the API
// server never sends the others) and of those only what translation reads, so neither a tenant's large or many
// unrelated Secrets nor a Secret's annotations (kubectl's last-applied copy holds its data again) cost memory,
// and a change to anything else is no change at all.
import type { JsonObject } from './api-client.js';

/** The Secret type Gateway listeners reference (Gateway API core support); the only one listed. */
export const TLS_SECRET_FIELD_SELECTOR = 'type=kubernetes.io/tls';

const KEPT_DATA = ['tls.crt', 'tls.key', 'ca.crt'];
const KEPT_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp', 'labels'];

export function secretEssentials(raw: JsonObject): JsonObject {
  const metadata = (raw.metadata ?? {}) as JsonObject;
  const keptMetadata: JsonObject = {};
  for (const key of KEPT_METADATA) if (metadata[key] !== undefined) keptMetadata[key] = metadata[key];
  const data = (raw.data ?? {}) as JsonObject;
  const keptData: JsonObject = {};
  for (const key of KEPT_DATA) if (typeof data[key] === 'string') keptData[key] = data[key];
  const out: JsonObject = { metadata: keptMetadata, data: keptData };
  if (raw.apiVersion !== undefined) out.apiVersion = raw.apiVersion;
  if (raw.kind !== undefined) out.kind = raw.kind;
  if (raw.type !== undefined) out.type = raw.type;
  return out;
}

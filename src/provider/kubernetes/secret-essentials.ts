// What the controller keeps of a Secret: it lists only `kubernetes.io/tls` Secrets (a field selector, so the API
// server never sends the others) and of those only what translation reads, so neither a tenant's large or many
// unrelated Secrets nor a Secret's annotations (kubectl's last-applied copy holds its data again) cost memory,
// and a change to anything else is no change at all. Of annotations only Portico's record of a renewed fleet
// certificate is kept (fleet-certificate-pins.ts).
import type { JsonObject } from './api-client.js';
import { PREVIOUS_CERTIFICATE_ANNOTATION, PREVIOUS_UNTIL_ANNOTATION } from './fleet-certificate-pins.js';

/** The Secret type Gateway listeners reference (Gateway API core support); the only one listed. */
export const TLS_SECRET_FIELD_SELECTOR = 'type=kubernetes.io/tls';

const KEPT_DATA = ['tls.crt', 'tls.key', 'ca.crt'];
const KEPT_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp', 'labels'];
/** Only Portico's own: a fleet client Secret's record of the certificate its renewal replaced. */
const KEPT_ANNOTATIONS = [PREVIOUS_CERTIFICATE_ANNOTATION, PREVIOUS_UNTIL_ANNOTATION];

export function secretEssentials(raw: JsonObject): JsonObject {
  const metadata = (raw.metadata ?? {}) as JsonObject;
  const keptMetadata: JsonObject = {};
  for (const key of KEPT_METADATA) if (metadata[key] !== undefined) keptMetadata[key] = metadata[key];
  const annotations = (metadata.annotations ?? {}) as JsonObject;
  const keptAnnotations: JsonObject = {};
  for (const key of KEPT_ANNOTATIONS)
    if (typeof annotations[key] === 'string') keptAnnotations[key] = annotations[key];
  if (Object.keys(keptAnnotations).length > 0) keptMetadata.annotations = keptAnnotations;
  const data = (raw.data ?? {}) as JsonObject;
  const keptData: JsonObject = {};
  for (const key of KEPT_DATA) if (typeof data[key] === 'string') keptData[key] = data[key];
  const out: JsonObject = { metadata: keptMetadata, data: keptData };
  if (raw.apiVersion !== undefined) out.apiVersion = raw.apiVersion;
  if (raw.kind !== undefined) out.kind = raw.kind;
  if (raw.type !== undefined) out.type = raw.type;
  return out;
}

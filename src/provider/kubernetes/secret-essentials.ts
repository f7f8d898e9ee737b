// What the controller keeps of a Secret: it lists only `kubernetes.io/tls` Secrets (a field selector, so the API
// server never sends the others) and of those only what translation reads, so neither a tenant's large or many
// unrelated Secrets nor a Secret's annotations (kubectl's last-applied copy holds its data again) cost memory,
// and a change to anything else is no change at all. Of annotations only Portico's record of a renewed fleet
// certificate is kept (fleet-certificate-pins.ts).

import { CREDENTIALS_LABEL } from '../../ir/well-known.js';
import type { JsonObject } from './api-client.js';
import { PREVIOUS_CERTIFICATE_ANNOTATION, PREVIOUS_UNTIL_ANNOTATION } from './fleet-certificate-pins.js';

/** The Secret type Gateway listeners reference (Gateway API core support), listed by type. */
export const TLS_SECRET_FIELD_SELECTOR = 'type=kubernetes.io/tls';

/**
 * Credentials Secrets by label rather than every Secret of the cluster: only what a user marked for Portico is ever
 * sent to it or held in its memory.
 */
export const CREDENTIALS_LABEL_SELECTOR = `${CREDENTIALS_LABEL}=true`;

const KEPT_DATA = ['tls.crt', 'tls.key', 'ca.crt'];
const KEPT_METADATA = ['name', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp', 'labels'];
/** Only Portico's own: a fleet client Secret's record of the certificate its renewal replaced. */
const KEPT_ANNOTATIONS = [PREVIOUS_CERTIFICATE_ANNOTATION, PREVIOUS_UNTIL_ANNOTATION];

/** A credentials Secret keeps every data key (policies name their own), and no annotation but Portico's. */
export function credentialSecretEssentials(raw: JsonObject): JsonObject {
  const out = secretEssentials(raw);
  return { ...out, data: { ...((raw.data ?? {}) as JsonObject) } };
}

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

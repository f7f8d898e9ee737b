// Secret material never leaves the process: every place that shows objects (the admin APIs, `portico translate`,
// log lines and error messages that quote an object) passes them through `redact`, the one place that knows
// which fields hold secrets.

export const REDACTED = '<redacted>';

/**
 * Fields whose value is secret wherever they appear: fleet configs carry TLS keys as `privateKeyPem`, credentials'
 * digests as `credentialDigest(s)` and a rate-limit Redis's AUTH as `password`, and
 * `kubectl apply` keeps a whole copy of the object (a Secret's data too) in an annotation.
 */
const SECRET_FIELDS = new Set([
  'privateKeyPem',
  'password',
  'kubectl.kubernetes.io/last-applied-configuration',
  // AccessPolicy: password hashes (basic auth) and API key digests.
  'credentialDigest',
  'credentialDigests',
  // AccessPolicy OIDC: the client's secret and the session cookies' key.
  'clientSecret',
  'cookieSecret',
]);
/** Kinds whose every data value is secret (its keys stay visible: they say what the Secret holds). */
const SECRET_KINDS = new Set(['Secret']);
const SECRET_DATA_FIELDS = ['data', 'stringData', 'binaryData'];

/** A deep copy of `value` with every secret replaced by `<redacted>`; the input is never changed. */
export function redact<T>(value: T): T {
  return redactValue(value) as T;
}

function redactValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactValue);
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  const secretKind = typeof record.kind === 'string' && SECRET_KINDS.has(record.kind);
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(record)) {
    if (SECRET_FIELDS.has(key) && field !== undefined) out[key] = REDACTED;
    else if (secretKind && SECRET_DATA_FIELDS.includes(key)) out[key] = redactedValues(field);
    else out[key] = redactValue(field);
  }
  return out;
}

function redactedValues(data: unknown): unknown {
  if (typeof data !== 'object' || data === null) return REDACTED;
  return Object.fromEntries(Object.keys(data).map((key) => [key, REDACTED]));
}

// Controller Namespace Mode: the discovery certificate table (certificate-pins.ts) read from the fleets' client
// Secrets, so every replica accepts exactly the certificate each fleet's Secret holds — and, when the leader
// renewed it, the one it replaced until the time the Secret records. Deleting or replacing a Secret by hand
// leaves no such record: the old certificate is refused at once.
import type { Secret } from '../../api/core.js';
import { fleetCertificateFacts } from '../../certificates/certs.js';
import type { CertificatePins, FleetCertificatePin } from '../../discovery/certificate-pins.js';
import { fleetClientSecretName } from '../../infra/kubernetes/render.js';
import { fleetInfraName } from '../../ir/fleet-infra.js';

/** Set by the leader on a renewal: the SHA-256 fingerprint of the certificate it replaced… */
export const PREVIOUS_CERTIFICATE_ANNOTATION = 'gateway.portico.io/previous-client-certificate-sha256';
/** …and until when (RFC 3339) that one is still accepted. */
export const PREVIOUS_UNTIL_ANNOTATION = 'gateway.portico.io/previous-client-certificate-until';

const MANAGED_BY = 'app.kubernetes.io/managed-by';

/** Fleet → its pin, from the Portico-managed client Secrets in the controller namespace. */
export function fleetCertificatePins(
  secrets: readonly Secret[],
  controllerNamespace: string,
): Map<string, FleetCertificatePin> {
  const pins = new Map<string, FleetCertificatePin>();
  for (const secret of secrets) {
    const meta = secret.metadata;
    if (meta.namespace !== controllerNamespace || meta.labels?.[MANAGED_BY] !== 'portico-gateway') continue;
    const pinned = pinOf(secret);
    if (pinned !== undefined) pins.set(pinned.fleet, pinned.pin);
  }
  return pins;
}

function pinOf(secret: Secret): { fleet: string; pin: FleetCertificatePin } | undefined {
  const certPem = Buffer.from(secret.data['tls.crt'] ?? '', 'base64').toString('utf8');
  let facts: ReturnType<typeof fleetCertificateFacts>;
  try {
    facts = fleetCertificateFacts(certPem);
  } catch {
    return undefined;
  }
  // Only the Secret named for the fleet speaks for it.
  const fleet = facts.fleet;
  if (fleet === undefined || secret.metadata.name !== fleetClientSecretName(fleetInfraName(fleet))) {
    return undefined;
  }
  const annotations = secret.metadata.annotations ?? {};
  const previous = annotations[PREVIOUS_CERTIFICATE_ANNOTATION];
  const until = Date.parse(annotations[PREVIOUS_UNTIL_ANNOTATION] ?? '');
  const pin: FleetCertificatePin =
    previous !== undefined && Number.isFinite(until)
      ? { current: facts.fingerprint, previous: { fingerprint: previous, until } }
      : { current: facts.fingerprint };
  return { fleet, pin };
}

/** Keeps `pins` to the snapshots' Secrets; a snapshot whose Secret list is unchanged (the same array) costs nothing. */
export function followFleetSecrets(
  pins: CertificatePins,
  controllerNamespace: string,
): (secrets: readonly Secret[]) => void {
  let last: readonly Secret[] | undefined;
  return (secrets) => {
    if (secrets === last) return;
    last = secrets;
    pins.replace(fleetCertificatePins(secrets, controllerNamespace));
  };
}

const fingerprints = new WeakMap<object, string | undefined>();

/** The fingerprint of the certificate in a watched Secret (its `data['tls.crt']`), once per object seen. */
export function observedFingerprint(secret: { data?: unknown } | undefined): string | undefined {
  if (secret === undefined) return undefined;
  if (fingerprints.has(secret)) return fingerprints.get(secret);
  const data = (secret.data ?? {}) as Record<string, unknown>;
  const encoded = data['tls.crt'];
  let fingerprint: string | undefined;
  try {
    fingerprint =
      typeof encoded === 'string'
        ? fleetCertificateFacts(Buffer.from(encoded, 'base64').toString('utf8')).fingerprint
        : undefined;
  } catch {
    fingerprint = undefined;
  }
  fingerprints.set(secret, fingerprint);
  return fingerprint;
}

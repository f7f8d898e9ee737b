// The Gateway's spec.tls.backend.clientCertificateRef: the certificate its proxies present to TLS backends. The
// reference is checked against ReferenceGrants before the Secret is looked up, so an ungranted reference never
// says whether the Secret exists.
import type { Secret } from '../api/core.js';
import type { Gateway } from '../api/gateway.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import { certificateProblem } from './certificates.js';
import type { Verdict } from './conditions.js';
import { notFound, referenceGranted, type SnapshotLookup } from './lookup.js';
import { tlsSecretPems } from './secrets.js';

export interface BackendClientCertificate {
  /** The Gateway's ResolvedRefs as far as this reference goes. */
  verdict: Verdict;
  /** `ns/name` of the TLS Secret, when usable. */
  secret?: string;
}

const FIELD = 'spec.tls.backend.clientCertificateRef';

/** Undefined when the Gateway names no client certificate. */
export function backendClientCertificate(
  g: Gateway,
  lookup: SnapshotLookup,
  verdicts: WeakMap<Secret, string | undefined>,
): BackendClientCertificate | undefined {
  const ref = g.spec.tls?.backend?.clientCertificateRef;
  if (ref === undefined) return undefined;
  const gwNs = g.metadata.namespace ?? '';
  const ns = ref.namespace ?? gwNs;
  const id = `${ns}/${ref.name}`;
  const fail = (reason: string, message: string): BackendClientCertificate => ({
    verdict: { ok: false, reason, message: `${FIELD}: ${message}` },
  });
  if (ref.group !== '' || ref.kind !== 'Secret')
    return fail(
      'InvalidClientCertificateRef',
      `unsupported kind ${ref.group === '' ? 'core' : ref.group}/${ref.kind}`,
    );
  const permitted = referenceGranted(lookup, {
    fromGroup: GATEWAY_API_GROUP,
    fromKind: 'Gateway',
    fromNamespace: gwNs,
    toGroup: '',
    toKind: 'Secret',
    toNamespace: ns,
    toName: ref.name,
  });
  if (!permitted)
    return fail('RefNotPermitted', `Secret ${id} is in another namespace and no ReferenceGrant allows it`);
  const secret = lookup.secrets.get(id);
  if (secret === undefined)
    return fail('InvalidClientCertificateRef', notFound(lookup, 'Secret', ns, ref.name));
  if (secret.type !== 'kubernetes.io/tls')
    return fail(
      'InvalidClientCertificateRef',
      `Secret ${id} is of type ${secret.type}, not kubernetes.io/tls`,
    );
  const pems = tlsSecretPems(secret);
  if (pems === undefined)
    return fail('InvalidClientCertificateRef', `Secret ${id} does not hold a PEM certificate and key`);
  const unusable = certificateProblem(secret, pems, verdicts);
  if (unusable !== undefined) return fail('InvalidClientCertificateRef', `Secret ${id}: ${unusable}`);
  return { verdict: { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' }, secret: id };
}

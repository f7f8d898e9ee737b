// A Gateway's client certificate validation (`spec.tls.frontend`): per HTTPS port, the per-port entry or the
// default; its CA bundles resolved from ConfigMaps and ClusterTrustBundles, the listener's conditions when they
// cannot be, and the Gateway's InsecureFrontendValidationMode condition when any port lets unverified clients in.
import type { FrontendTLSConfig, Gateway } from '../api/gateway.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import type { ClientValidation } from '../ir/fleet-config.js';
import { type CaProblemKind, caBundle } from './ca-bundles.js';
import type { Verdict } from './conditions.js';
import { referenceGranted, type SnapshotLookup } from './lookup.js';

export interface FrontendVerdict {
  /** What the proxy checks on the port; undefined when nothing is configured or nothing resolved. */
  validation?: ClientValidation;
  /** ResolvedRefs=False when a CA reference is invalid. */
  resolvedRefs?: Verdict;
  /** Accepted=False (NoValidCACertificate) when none is valid: the listener is not served at all (fail closed). */
  accepted?: Verdict;
}

const REASONS: Record<CaProblemKind, string> = {
  kind: 'InvalidCACertificateKind',
  'not-permitted': 'RefNotPermitted',
  missing: 'InvalidCACertificateRef',
};

/** The frontend TLS settings that apply to `port`, and the field they are read from. */
function configFor(gateway: Gateway, port: number): { config: FrontendTLSConfig; at: string } | undefined {
  const frontend = gateway.spec.tls?.frontend;
  if (frontend === undefined) return undefined;
  const i = frontend.perPort.findIndex((p) => p.port === port);
  return i >= 0
    ? { config: frontend.perPort[i]!.tls, at: `spec.tls.frontend.perPort[${i}].tls` }
    : { config: frontend.default, at: 'spec.tls.frontend.default' };
}

/** The validation an HTTPS listener of `gateway` (its own, or a ListenerSet's joining it) on `port` gets. */
export function frontendValidation(gateway: Gateway, port: number, lookup: SnapshotLookup): FrontendVerdict {
  const found = configFor(gateway, port);
  const validation = found?.config.validation;
  if (found === undefined || validation === undefined) return {};
  const namespace = gateway.metadata.namespace ?? '';
  const bundle = caBundle(
    validation.caCertificateRefs,
    `${found.at}.validation.caCertificateRefs`,
    namespace,
    lookup,
    (toNamespace, toName) =>
      referenceGranted(lookup, {
        fromGroup: GATEWAY_API_GROUP,
        fromKind: 'Gateway',
        fromNamespace: namespace,
        toGroup: '',
        toKind: 'ConfigMap',
        toNamespace,
        toName,
      }),
  );
  const verdict: FrontendVerdict = {};
  if (bundle.problems.length > 0) {
    const message = bundle.problems.map((p) => p.message).join('; ');
    verdict.resolvedRefs = { ok: false, reason: REASONS[bundle.problems[0]!.kind], message };
  }
  if (bundle.pem === undefined) {
    const message = `no valid CA certificate for client validation: ${verdict.resolvedRefs?.message ?? ''}`;
    verdict.accepted = { ok: false, reason: 'NoValidCACertificate', message };
    return verdict;
  }
  verdict.validation = { caPem: bundle.pem, mode: validation.mode };
  return verdict;
}

/** Whether the Gateway lets clients without a valid certificate in on some port (the specification's warning). */
export function insecureFrontend(gateway: Gateway): boolean {
  const frontend = gateway.spec.tls?.frontend;
  if (frontend === undefined) return false;
  return [frontend.default, ...frontend.perPort.map((p) => p.tls)].some(
    (c) => c.validation?.mode === 'AllowInsecureFallback',
  );
}

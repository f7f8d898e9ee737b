// BackendTLSPolicy: which policy holds each Service (port), what it asks of the proxy (SNI, CA, names), and the
// policy's own verdict. Oldest policy wins a target; a policy whose CA cannot be resolved still holds its target
// and makes it refuse connections (fail closed: never plaintext to a backend that asked for TLS).
import type { BackendTLSPolicy } from '../api/backend-tls-policy.js';
import type { Service } from '../api/core.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import type { ClusterTls, FleetConfig } from '../ir/fleet-config.js';
import { type CaSources, caBundle } from './ca-bundles.js';
import { condition } from './conditions.js';
import { byAge, byNsName, nsName } from './object-order.js';
import { listedAncestors } from './policy-attachment.js';
import type { ObjectStatus } from './types.js';

/** The well-known CA set the runtime has (Node's bundled Mozilla roots). */
const SYSTEM_CAS = 'System';

export interface PolicyVerdict {
  policy: BackendTLSPolicy;
  accepted: { ok: boolean; reason: string; message: string };
  resolvedRefs: { ok: boolean; reason: string; message: string };
  /** What the proxy gets for the targets this policy holds. */
  tls: ClusterTls;
}

export interface BackendTlsIndex {
  /** `ns/service` (whole Service) or `ns/service#portName` → the verdict of the policy holding it. */
  holders: Map<string, PolicyVerdict>;
  /** Every policy's verdict, in namespace/name order (conflicted ones too: they get a status). */
  verdicts: PolicyVerdict[];
}

function targetKey(namespace: string, service: string, section: string | undefined): string {
  return section === undefined || section === ''
    ? `${namespace}/${service}`
    : `${namespace}/${service}#${section}`;
}

/** The `spec.options` keys Portico reads: none yet. */
const SUPPORTED_OPTIONS: ReadonlySet<string> = new Set();

/**
 * A policy naming an option Portico does not read is refused and its targets fail closed: an option may ask for a
 * stricter TLS (a minimum version, ciphers) than the proxy would otherwise use.
 */
function unsupportedOptions(policy: BackendTLSPolicy, tls: ClusterTls): PolicyVerdict | undefined {
  const keys = Object.keys(policy.spec.options ?? {}).filter((k) => !SUPPORTED_OPTIONS.has(k));
  if (keys.length === 0) return undefined;
  const named = keys
    .sort()
    .map((k) => `'${k}'`)
    .join(', ');
  const message = `spec.options: ${named} not supported (Portico reads no options)`;
  return {
    policy,
    accepted: { ok: false, reason: 'Invalid', message },
    resolvedRefs: { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' },
    tls: { ...tls, refused: message },
  };
}

function verdictOf(policy: BackendTLSPolicy, sources: CaSources): PolicyVerdict {
  const v = policy.spec.validation;
  const tls: ClusterTls = {
    policy: nsName(policy),
    serverName: v.hostname,
    subjectAltNames: (v.subjectAltNames ?? []).map((san) => ({
      type: san.type,
      value: san.type === 'Hostname' ? (san.hostname ?? '') : (san.uri ?? ''),
    })),
  };
  return unsupportedOptions(policy, tls) ?? caVerdict(policy, tls, sources);
}

function caVerdict(policy: BackendTLSPolicy, tls: ClusterTls, sources: CaSources): PolicyVerdict {
  const ns = policy.metadata.namespace ?? '';
  const v = policy.spec.validation;
  const refs = v.caCertificateRefs ?? [];
  if (refs.length === 0) {
    const wellKnown = v.wellKnownCACertificates ?? '';
    if (wellKnown !== SYSTEM_CAS) {
      const message = `spec.validation.wellKnownCACertificates: '${wellKnown}' is not supported (only System)`;
      return {
        policy,
        accepted: { ok: false, reason: 'Invalid', message },
        resolvedRefs: { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' },
        tls: { ...tls, refused: message },
      };
    }
    return {
      policy,
      accepted: { ok: true, reason: 'Accepted', message: 'Accepted' },
      resolvedRefs: { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' },
      tls,
    };
  }
  // A BackendTLSPolicy's references are local: another namespace is never named, so no grant is asked.
  const bundle = caBundle(refs, 'spec.validation.caCertificateRefs', ns, sources, () => false);
  if (bundle.problems.length === 0) {
    return {
      policy,
      accepted: { ok: true, reason: 'Accepted', message: 'Accepted' },
      resolvedRefs: { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' },
      tls: { ...tls, caPem: bundle.pem! },
    };
  }
  const message = bundle.problems.map((p) => p.message).join('; ');
  const first = bundle.problems[0]!;
  const resolvedRefs = {
    ok: false,
    reason: first.kind === 'kind' ? 'InvalidKind' : 'InvalidCACertificateRef',
    message,
  };
  // Any invalid reference makes connections fail (the spec: connections using an invalid ref MUST fail).
  return {
    policy,
    accepted:
      bundle.pem === undefined
        ? { ok: false, reason: 'NoValidCACertificate', message }
        : { ok: true, reason: 'Accepted', message: 'Accepted' },
    resolvedRefs,
    tls: { ...tls, refused: message },
  };
}

/** Pure: the same policies and CA sources give equal results. */
export function indexBackendTlsPolicies(
  policies: readonly BackendTLSPolicy[],
  sources: CaSources,
): BackendTlsIndex {
  const holders = new Map<string, PolicyVerdict>();
  const verdicts: PolicyVerdict[] = [];
  for (const policy of [...policies].sort(byAge)) {
    const ns = policy.metadata.namespace ?? '';
    const verdict = verdictOf(policy, sources);
    const lost: string[] = [];
    for (const t of policy.spec.targetRefs) {
      if (t.group !== '' || t.kind !== 'Service') continue;
      const key = targetKey(ns, t.name, t.sectionName);
      const holder = holders.get(key);
      if (holder === undefined) holders.set(key, verdict);
      else if (holder !== verdict)
        lost.push(`${key} is held by the older BackendTLSPolicy ${holder.tls.policy}`);
    }
    verdicts.push(
      lost.length > 0
        ? { ...verdict, accepted: { ok: false, reason: 'Conflicted', message: lost.join('; ') } }
        : verdict,
    );
  }
  verdicts.sort((a, b) => byNsName(a.policy, b.policy));
  return { holders, verdicts };
}

/** The verdict of the policy that holds a Service port: by the port's name first, then the whole Service. */
export function backendTlsFor(
  index: BackendTlsIndex,
  service: Service,
  port: number,
): PolicyVerdict | undefined {
  if (index.holders.size === 0) return undefined;
  const ns = service.metadata.namespace ?? '';
  const portName = service.spec.ports.find((p) => p.port === port)?.name;
  const bySection =
    portName === undefined ? undefined : index.holders.get(targetKey(ns, service.metadata.name, portName));
  return bySection ?? index.holders.get(targetKey(ns, service.metadata.name, undefined));
}

/** `ns/service` → the Gateways (`ns/name`) whose routes reach it, read from the fleets' configs. */
export function gatewaysByService(configs: readonly FleetConfig[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const config of configs) {
    const services = new Map<string, string>();
    for (const c of config.clusters) services.set(c.name, `${c.service.namespace}/${c.service.name}`);
    const gatewaysOf = new Map<string, string[]>();
    for (const l of config.listeners)
      gatewaysOf.set(
        l.name,
        l.gatewayListeners.map((g) => g.gateway),
      );
    for (const vh of config.virtualHosts) {
      for (const route of vh.routes) {
        if (route.action.type !== 'Forward') continue;
        for (const b of route.action.backends) {
          const service = b.cluster === undefined ? undefined : services.get(b.cluster);
          if (service === undefined) continue;
          const set = out.get(service) ?? new Set<string>();
          out.set(service, set);
          for (const g of gatewaysOf.get(vh.listener) ?? []) set.add(g);
        }
      }
    }
  }
  return out;
}

/**
 * Each policy's status: one ancestor per Gateway whose routes reach a Service it targets. A policy no route of
 * ours reaches gets none (no entry to write).
 */
export function backendTlsStatuses(
  index: BackendTlsIndex,
  reached: Map<string, Set<string>>,
  controllerName: string,
): ObjectStatus[] {
  const out: ObjectStatus[] = [];
  for (const v of index.verdicts) {
    const p = v.policy;
    const ns = p.metadata.namespace ?? '';
    const gateways = new Set<string>();
    for (const t of p.spec.targetRefs) {
      if (t.group !== '' || t.kind !== 'Service') continue;
      for (const g of reached.get(`${ns}/${t.name}`) ?? []) gateways.add(g);
    }
    if (gateways.size === 0) continue;
    const generation = p.metadata.generation;
    const conditions = [
      condition('Accepted', v.accepted.ok, v.accepted.reason, v.accepted.message, generation),
      condition('ResolvedRefs', v.resolvedRefs.ok, v.resolvedRefs.reason, v.resolvedRefs.message, generation),
    ];
    const ancestors = listedAncestors([...gateways].sort()).map((g) => {
      const [gatewayNamespace, gatewayName] = g.split('/') as [string, string];
      return {
        ancestorRef: {
          group: GATEWAY_API_GROUP,
          kind: 'Gateway',
          namespace: gatewayNamespace,
          name: gatewayName,
        },
        controllerName,
        conditions,
      };
    });
    out.push({
      apiVersion: p.apiVersion,
      kind: 'BackendTLSPolicy',
      namespace: ns,
      name: p.metadata.name,
      generation,
      status: { ancestors },
    });
  }
  return out;
}

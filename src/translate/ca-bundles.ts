// CA bundles from ConfigMaps (`ca.crt`) and ClusterTrustBundles (`spec.trustBundle`, GEP-5075), as
// BackendTLSPolicy and a Gateway's client certificate validation name them: each reference resolved or given a
// problem of a kind the caller turns into its own condition reason.
import { X509Certificate } from 'node:crypto';
import { CERTIFICATES_GROUP, type ClusterTrustBundle, type ConfigMap } from '../api/core.js';

export interface CaReference {
  group: string;
  kind: string;
  name: string;
  namespace?: string;
}

export type CaProblemKind = 'kind' | 'not-permitted' | 'missing';

export interface CaProblem {
  kind: CaProblemKind;
  message: string;
}

export interface CaBundle {
  /** The PEM certificates of every reference that resolved, one bundle; undefined when none did. */
  pem: string | undefined;
  problems: CaProblem[];
}

/** What CA references resolve against. */
export interface CaSources {
  /** By `ns/name`. */
  configMaps: ReadonlyMap<string, ConfigMap>;
  /** By name; undefined when the API server does not serve ClusterTrustBundles (the kind is then unknown). */
  clusterTrustBundles: ReadonlyMap<string, ClusterTrustBundle> | undefined;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The index of the first PEM block of a bundle that does not parse as X.509, -1 when all do, by the bundle's
 * text: every translation pass reads every bundle, and the same text parses the same way (bounded, so a stream of
 * edited bundles does not grow it).
 */
const unparsedBlock = new Map<string, number>();
const UNPARSED_MEMO_MAX = 1024;

function firstUnparsed(blocks: readonly string[], text: string): number {
  const known = unparsedBlock.get(text);
  if (known !== undefined) return known;
  const index = blocks.findIndex((block) => {
    try {
      new X509Certificate(block);
      return false;
    } catch {
      return true;
    }
  });
  if (unparsedBlock.size >= UNPARSED_MEMO_MAX) unparsedBlock.clear();
  unparsedBlock.set(text, index);
  return index;
}

/** A CA bundle's first problem (its text at `key`), or undefined when every PEM certificate in it parses. */
function contentProblem(pem: string | undefined, key: string): string | undefined {
  if (pem === undefined) return `has no key ${key}`;
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) return `${key} holds no PEM certificate`;
  const bad = firstUnparsed(blocks, pem);
  return bad === -1 ? undefined : `${key} certificate ${bad + 1} does not parse`;
}

type Resolved = { pem: string } | CaProblem;

function configMapBundle(
  ref: CaReference,
  field: string,
  namespace: string,
  configMaps: CaSources['configMaps'],
  permitted: (namespace: string, name: string) => boolean,
): Resolved {
  const ns = ref.namespace ?? namespace;
  if (ns !== namespace && !permitted(ns, ref.name)) {
    return {
      kind: 'not-permitted',
      message: `${field}: ConfigMap ${ns}/${ref.name} is in another namespace and no ReferenceGrant allows it`,
    };
  }
  const pem = configMaps.get(`${ns}/${ref.name}`)?.data['ca.crt'];
  const problem = configMaps.has(`${ns}/${ref.name}`) ? contentProblem(pem, 'ca.crt') : 'not found';
  if (problem !== undefined)
    return { kind: 'missing', message: `${field}: ConfigMap ${ns}/${ref.name} ${problem}` };
  return { pem: pem! };
}

/** Cluster-scoped: no namespace, so no ReferenceGrant either (GEP-5075). */
function clusterTrustBundle(ref: CaReference, field: string, sources: CaSources): Resolved {
  const bundles = sources.clusterTrustBundles;
  if (bundles === undefined) {
    return {
      kind: 'kind',
      message: `${field}: ClusterTrustBundle (${CERTIFICATES_GROUP}) is not served by the API server`,
    };
  }
  if (ref.namespace !== undefined) {
    return {
      kind: 'missing',
      message: `${field}: ClusterTrustBundle ${ref.name} is cluster-scoped; namespace must be unset`,
    };
  }
  const bundle = bundles.get(ref.name);
  const problem =
    bundle === undefined ? 'not found' : contentProblem(bundle.spec.trustBundle, 'spec.trustBundle');
  if (problem !== undefined)
    return { kind: 'missing', message: `${field}: ClusterTrustBundle ${ref.name} ${problem}` };
  return { pem: bundle!.spec.trustBundle };
}

/**
 * Resolves `refs` (the field `at`) of an object in `namespace`; `permitted` says whether a reference to a ConfigMap
 * in another namespace is allowed (a ReferenceGrant), and is asked before any lookup, so a refusal leaks nothing.
 */
export function caBundle(
  refs: readonly CaReference[],
  at: string,
  namespace: string,
  sources: CaSources,
  permitted: (namespace: string, name: string) => boolean,
): CaBundle {
  const pems: string[] = [];
  const problems: CaProblem[] = [];
  refs.forEach((ref, i) => {
    const field = `${at}[${i}]`;
    let resolved: Resolved;
    if (ref.group === '' && ref.kind === 'ConfigMap') {
      resolved = configMapBundle(ref, field, namespace, sources.configMaps, permitted);
    } else if (ref.group === CERTIFICATES_GROUP && ref.kind === 'ClusterTrustBundle') {
      resolved = clusterTrustBundle(ref, field, sources);
    } else {
      const kind = ref.group === '' ? ref.kind : `${ref.group}/${ref.kind}`;
      resolved = {
        kind: 'kind',
        message: `${field}: unsupported kind ${kind} (only ConfigMap and ${CERTIFICATES_GROUP}/ClusterTrustBundle)`,
      };
    }
    if ('pem' in resolved) pems.push(resolved.pem.trim());
    else problems.push(resolved);
  });
  return { pem: pems.length === 0 ? undefined : `${pems.join('\n')}\n`, problems };
}

// CA bundles from ConfigMaps (`ca.crt`), as BackendTLSPolicy and a Gateway's client certificate validation name
// them: each reference resolved or given a problem of a kind the caller turns into its own condition reason.
import type { ConfigMap } from '../api/core.js';

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

/** A CA bundle's first problem, or undefined when it holds at least one PEM certificate. */
function contentProblem(pem: string | undefined): string | undefined {
  if (pem === undefined) return 'has no key ca.crt';
  if (!/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.test(pem))
    return 'ca.crt holds no PEM certificate';
  return undefined;
}

/**
 * Resolves `refs` (the field `at`) of an object in `namespace`; `permitted` says whether a reference to a ConfigMap
 * in another namespace is allowed (a ReferenceGrant), and is asked before any lookup, so a refusal leaks nothing.
 */
export function caBundle(
  refs: readonly CaReference[],
  at: string,
  namespace: string,
  configMaps: ReadonlyMap<string, ConfigMap>,
  permitted: (namespace: string, name: string) => boolean,
): CaBundle {
  const pems: string[] = [];
  const problems: CaProblem[] = [];
  refs.forEach((ref, i) => {
    const field = `${at}[${i}]`;
    if (ref.group !== '' || ref.kind !== 'ConfigMap') {
      const kind = ref.group === '' ? ref.kind : `${ref.group}/${ref.kind}`;
      problems.push({ kind: 'kind', message: `${field}: unsupported kind ${kind} (only ConfigMap)` });
      return;
    }
    const ns = ref.namespace ?? namespace;
    if (ns !== namespace && !permitted(ns, ref.name)) {
      problems.push({
        kind: 'not-permitted',
        message: `${field}: ConfigMap ${ns}/${ref.name} is in another namespace and no ReferenceGrant allows it`,
      });
      return;
    }
    const configMap = configMaps.get(`${ns}/${ref.name}`);
    const problem = configMap === undefined ? 'not found' : contentProblem(configMap.data['ca.crt']);
    if (problem !== undefined) {
      problems.push({ kind: 'missing', message: `${field}: ConfigMap ${ns}/${ref.name} ${problem}` });
      return;
    }
    pems.push(configMap!.data['ca.crt']!.trim());
  });
  return { pem: pems.length === 0 ? undefined : `${pems.join('\n')}\n`, problems };
}

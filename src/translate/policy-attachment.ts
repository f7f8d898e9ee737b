// Policy attachment (GEP-713, GEP-2648) for every Portico policy kind: which policy holds each target, which one a
// listener or a route rule gets, and each policy's `status.ancestors`. Pure; knows no kind's effect.
//
// Precedence, most specific first (the first that holds one wins whole, no field merge): a route rule (sectionName)
// > its route > the owning listener's ListenerSet listener (sectionName) > that ListenerSet > the Gateway's listener
// (sectionName) > the Gateway. Two policies of one kind on one target (and section): the oldest holds it
// (creationTimestamp, then namespace/name), the other is Conflicted there.
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import type { PolicyTargetKind, PolicyTargetRef } from '../api/policy-target.js';
import { condition, type Verdict } from './conditions.js';
import { byAge, byNsName } from './object-order.js';
import type { ObjectStatus } from './types.js';

/** What attachment reads of a policy, whatever its kind. */
export interface AttachablePolicy {
  apiVersion: string;
  kind: string;
  metadata: { namespace?: string; name: string; creationTimestamp?: string; generation: number };
  spec: { targetRefs: readonly PolicyTargetRef[] };
}

/** An object a policy may target, as this translation sees it. */
export interface PolicyTarget {
  /** Section names it has: listener names, or route rule names. */
  sections: ReadonlySet<string>;
  /** Our Gateways (`ns/name`) it belongs to or attaches to; empty: not ours, no status is written for it. */
  gateways: readonly string[];
}

/** Every object a policy may target, by targetKey(kind, namespace, name). */
export type PolicyTargets = ReadonlyMap<string, PolicyTarget>;

/** `HTTPRoute ns/name`, and `…#section` for one section of it. */
export function targetKey(kind: PolicyTargetKind, namespace: string, name: string, section?: string): string {
  return section === undefined ? `${kind} ${namespace}/${name}` : `${kind} ${namespace}/${name}#${section}`;
}

export interface PolicyAttachment<P extends AttachablePolicy> {
  /** targetKey (with section, when the policy names one) → the policy holding it. */
  holders: ReadonlyMap<string, P>;
  /** Each policy's status (those with no ancestor to report have none), in namespace/name order. */
  statuses: ObjectStatus[];
}

/** The most ancestors a status lists (the Gateway API's maximum). */
const MAX_ANCESTORS = 16;

/** A policy status's ancestors, already sorted, cut to the API's maximum (the API server refuses more). */
export function listedAncestors<T>(sorted: readonly T[]): T[] {
  return sorted.slice(0, MAX_ANCESTORS);
}

interface AncestorVerdict {
  gateway: string;
  /** The listener (Gateway or ListenerSet target with a sectionName); absent for the whole object. */
  ref: Record<string, string>;
  verdict: Verdict;
}

const ACCEPTED: Verdict = { ok: true, reason: 'Accepted', message: 'Accepted' };

/**
 * Which policy holds each target, and every policy's status. `invalid` says why a policy's spec cannot be
 * honoured: such a policy still holds its targets (they refuse what it covers: fail closed) and says Invalid.
 */
export function attachPolicies<P extends AttachablePolicy>(
  policies: readonly P[],
  targets: PolicyTargets,
  invalid: (policy: P) => string | undefined,
  controllerName: string,
): PolicyAttachment<P> {
  const holders = new Map<string, P>();
  const statuses: ObjectStatus[] = [];
  for (const policy of [...policies].sort(byAge)) {
    const ns = policy.metadata.namespace ?? '';
    const problem = invalid(policy);
    const ancestors: AncestorVerdict[] = [];
    for (const ref of policy.spec.targetRefs) {
      const target = targets.get(targetKey(ref.kind, ns, ref.name));
      const ancestorRef = (gateway: string): Record<string, string> => {
        const [namespace, name] = gateway.split('/') as [string, string];
        const at: Record<string, string> = { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace, name };
        if (ref.sectionName !== undefined && ref.kind === 'Gateway') at.sectionName = ref.sectionName;
        return at;
      };
      if (target === undefined || (ref.sectionName !== undefined && !target.sections.has(ref.sectionName))) {
        const what = ref.sectionName === undefined ? '' : ` with section ${ref.sectionName}`;
        const ref0: Record<string, string> = {
          group: GATEWAY_API_GROUP,
          kind: ref.kind,
          namespace: ns,
          name: ref.name,
        };
        if (ref.sectionName !== undefined) ref0.sectionName = ref.sectionName;
        ancestors.push({
          gateway: `${ref.kind} ${ns}/${ref.name}`,
          ref: ref0,
          verdict: {
            ok: false,
            reason: 'TargetNotFound',
            message: `${ref.kind} ${ns}/${ref.name}${what} not found`,
          },
        });
        continue;
      }
      const key = targetKey(ref.kind, ns, ref.name, ref.sectionName);
      const holder = holders.get(key);
      let verdict: Verdict;
      if (holder !== undefined && holder !== policy) {
        const message = `${key} is held by the older ${holder.kind} ${holder.metadata.namespace}/${holder.metadata.name}`;
        verdict = { ok: false, reason: 'Conflicted', message };
      } else {
        holders.set(key, policy);
        verdict = problem === undefined ? ACCEPTED : { ok: false, reason: 'Invalid', message: problem };
      }
      for (const gateway of target.gateways) ancestors.push({ gateway, ref: ancestorRef(gateway), verdict });
    }
    const status = policyStatus(policy, ancestors, controllerName);
    if (status !== undefined) statuses.push(status);
  }
  statuses.sort((a, b) => byNsName({ metadata: a }, { metadata: b }));
  return { holders, statuses };
}

/** One entry per ancestor (a refusal wins over an acceptance for the same one), sorted, at most 16. */
function policyStatus(
  policy: AttachablePolicy,
  ancestors: AncestorVerdict[],
  controllerName: string,
): ObjectStatus | undefined {
  const byRef = new Map<string, AncestorVerdict>();
  for (const a of ancestors) {
    const key = JSON.stringify(a.ref);
    const seen = byRef.get(key);
    if (seen === undefined || (seen.verdict.ok && !a.verdict.ok)) byRef.set(key, a);
  }
  if (byRef.size === 0) return undefined;
  const generation = policy.metadata.generation;
  const sorted = [...byRef.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const entries = listedAncestors(sorted).map(([, a]) => ({
    ancestorRef: a.ref,
    controllerName,
    conditions: [condition('Accepted', a.verdict.ok, a.verdict.reason, a.verdict.message, generation)],
  }));
  return {
    apiVersion: policy.apiVersion,
    kind: policy.kind,
    ...(policy.metadata.namespace === undefined ? {} : { namespace: policy.metadata.namespace }),
    name: policy.metadata.name,
    generation,
    status: { ancestors: entries },
  };
}

/** The listener a VirtualHost is owned by, as precedence reads it. */
export interface ListenerPlace {
  gateway: string;
  listener: string;
  /** Set for a ListenerSet's listener: its `ns/name`. */
  listenerSet?: string;
}

function split(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}

/** The policy a listener gets: its ListenerSet listener's, its ListenerSet's, its Gateway listener's, its Gateway's. */
export function listenerHolder<P>(holders: ReadonlyMap<string, P>, place: ListenerPlace): P | undefined {
  const [gns, gname] = split(place.gateway);
  if (place.listenerSet !== undefined) {
    const [lns, lname] = split(place.listenerSet);
    const held =
      holders.get(targetKey('ListenerSet', lns, lname, place.listener)) ??
      holders.get(targetKey('ListenerSet', lns, lname));
    if (held !== undefined) return held;
  } else {
    const held = holders.get(targetKey('Gateway', gns, gname, place.listener));
    if (held !== undefined) return held;
  }
  return holders.get(targetKey('Gateway', gns, gname));
}

/** The policy a route rule gets: its own (by the rule's name), else its route's. */
export function ruleHolder<P>(
  holders: ReadonlyMap<string, P>,
  kind: 'HTTPRoute' | 'GRPCRoute',
  namespace: string,
  name: string,
  ruleName: string | undefined,
): P | undefined {
  const own = ruleName === undefined ? undefined : holders.get(targetKey(kind, namespace, name, ruleName));
  return own ?? holders.get(targetKey(kind, namespace, name));
}

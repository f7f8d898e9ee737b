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

/** targetKey (with section) → the oldest policy naming that target (a missing target or section holds none). */
function holdersOf<P extends AttachablePolicy>(sorted: readonly P[], targets: PolicyTargets): Map<string, P> {
  const holders = new Map<string, P>();
  for (const policy of sorted) {
    const ns = policy.metadata.namespace ?? '';
    for (const ref of policy.spec.targetRefs) {
      const target = targets.get(targetKey(ref.kind, ns, ref.name));
      if (target === undefined || (ref.sectionName !== undefined && !target.sections.has(ref.sectionName)))
        continue;
      const key = targetKey(ref.kind, ns, ref.name, ref.sectionName);
      if (!holders.has(key)) holders.set(key, policy);
    }
  }
  return holders;
}

/**
 * Which policy holds each target, and every policy's status. `invalid` says why a policy's spec cannot be
 * honoured: such a policy still holds its targets (they refuse what it covers: fail closed) and says Invalid.
 * `overruled`, from the holders, says of a held target (by targetKey with section) why its accepted policy still
 * does not take effect there (a ClientTrafficPolicy on a listener whose port another listener's policy sets):
 * that ancestor then says Conflicted with that message.
 */
export function attachPolicies<P extends AttachablePolicy>(
  policies: readonly P[],
  targets: PolicyTargets,
  invalid: (policy: P) => string | undefined,
  controllerName: string,
  overruled?: (holders: ReadonlyMap<string, P>) => ReadonlyMap<string, string>,
): PolicyAttachment<P> {
  const sorted = [...policies].sort(byAge);
  const holders = holdersOf(sorted, targets);
  const lost = overruled?.(holders);
  const statuses: ObjectStatus[] = [];
  for (const policy of sorted) {
    const ns = policy.metadata.namespace ?? '';
    const problem = invalid(policy);
    const ancestors: AncestorVerdict[] = [];
    for (const ref of policy.spec.targetRefs) {
      const target = targets.get(targetKey(ref.kind, ns, ref.name));
      if (target === undefined || (ref.sectionName !== undefined && !target.sections.has(ref.sectionName))) {
        ancestors.push(notFound(ref, ns));
        continue;
      }
      const key = targetKey(ref.kind, ns, ref.name, ref.sectionName);
      const holder = holders.get(key)!;
      const overruledBy = lost?.get(key);
      let verdict: Verdict;
      if (holder !== policy) {
        const message = `${key} is held by the older ${holder.kind} ${holder.metadata.namespace}/${holder.metadata.name}`;
        verdict = { ok: false, reason: 'Conflicted', message };
      } else if (problem !== undefined) verdict = { ok: false, reason: 'Invalid', message: problem };
      else if (overruledBy !== undefined) verdict = { ok: false, reason: 'Conflicted', message: overruledBy };
      else verdict = ACCEPTED;
      for (const gateway of target.gateways)
        ancestors.push({ gateway, ref: gatewayAncestorRef(gateway, ref), verdict });
    }
    const status = policyStatus(policy, ancestors, controllerName);
    if (status !== undefined) statuses.push(status);
  }
  statuses.sort((a, b) => byNsName({ metadata: a }, { metadata: b }));
  return { holders, statuses };
}

/** The Gateway ancestor of a found target: with the listener's name when the policy names one of a Gateway. */
function gatewayAncestorRef(gateway: string, ref: PolicyTargetRef): Record<string, string> {
  const [namespace, name] = gateway.split('/') as [string, string];
  const at: Record<string, string> = { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace, name };
  if (ref.sectionName !== undefined && ref.kind === 'Gateway') at.sectionName = ref.sectionName;
  return at;
}

/** A target (or its section) that does not exist: the target itself is the ancestor, TargetNotFound. */
function notFound(ref: PolicyTargetRef, ns: string): AncestorVerdict {
  const what = ref.sectionName === undefined ? '' : ` with section ${ref.sectionName}`;
  const at: Record<string, string> = {
    group: GATEWAY_API_GROUP,
    kind: ref.kind,
    namespace: ns,
    name: ref.name,
  };
  if (ref.sectionName !== undefined) at.sectionName = ref.sectionName;
  return {
    gateway: `${ref.kind} ${ns}/${ref.name}`,
    ref: at,
    verdict: {
      ok: false,
      reason: 'TargetNotFound',
      message: `${ref.kind} ${ns}/${ref.name}${what} not found`,
    },
  };
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

/**
 * The targetKey holding a listener's policy: its ListenerSet listener's, its ListenerSet's, its Gateway listener's,
 * its Gateway's; undefined when none holds one.
 */
export function listenerHolderKey(
  holders: ReadonlyMap<string, unknown>,
  place: ListenerPlace,
): string | undefined {
  const [gns, gname] = split(place.gateway);
  const candidates =
    place.listenerSet === undefined
      ? [targetKey('Gateway', gns, gname, place.listener)]
      : [
          targetKey('ListenerSet', ...split(place.listenerSet), place.listener),
          targetKey('ListenerSet', ...split(place.listenerSet)),
        ];
  candidates.push(targetKey('Gateway', gns, gname));
  return candidates.find((key) => holders.has(key));
}

/** The policy a listener gets (listenerHolderKey's). */
export function listenerHolder<P>(holders: ReadonlyMap<string, P>, place: ListenerPlace): P | undefined {
  const key = listenerHolderKey(holders, place);
  return key === undefined ? undefined : holders.get(key);
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

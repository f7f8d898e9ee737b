// ListenerSets joining our Gateways: which may (the Gateway's spec.allowedListeners), in what precedence (the
// Gateway's own listeners, then ListenerSets oldest first, then by namespace/name), and their listeners evaluated
// as the Gateway's and checked for conflicts with every listener of the fleet that comes before them.
import type { Secret } from '../api/core.js';
import type { Gateway } from '../api/gateway.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import { selectorMatches } from '../api/label-selector.js';
import type { ListenerSet } from '../api/listener-set.js';
import type { Verdict } from './conditions.js';
import { evaluateListenerSetListener, markConflicts, ready } from './listeners.js';
import type { SnapshotLookup } from './lookup.js';
import { byAge, nsName } from './object-order.js';
import { type GatewayEntry, type ListenerSetEntry, ownListeners } from './routes.js';

/** Does the Gateway's spec.allowedListeners admit ListenerSets from this namespace? */
function namespaceAllowed(g: Gateway, namespace: string, lookup: SnapshotLookup): Verdict {
  const from = g.spec.allowedListeners?.namespaces;
  const gwNs = g.metadata.namespace ?? '';
  const no = (message: string): Verdict => ({ ok: false, reason: 'NotAllowed', message });
  const yes: Verdict = { ok: true, reason: 'Accepted', message: 'Accepted' };
  switch (from?.from ?? 'None') {
    case 'All':
      return yes;
    case 'Same':
      return namespace === gwNs
        ? yes
        : no(`Gateway ${nsName(g)} allows ListenerSets from its own namespace only`);
    case 'Selector': {
      // The API server labels every namespace with its own name; files may omit it.
      const labels = {
        ...(lookup.namespaceLabels.get(namespace) ?? {}),
        'kubernetes.io/metadata.name': namespace,
      };
      const selector = from?.selector;
      return selector !== undefined && selectorMatches(selector, labels)
        ? yes
        : no(`namespace ${namespace} does not match Gateway ${nsName(g)}'s spec.allowedListeners selector`);
    }
    default:
      return no(
        `Gateway ${nsName(g)} allows no ListenerSets (spec.allowedListeners.namespaces.from is None)`,
      );
  }
}

/** Is the Gateway's fleet serving it, so that listeners may join it? Its class must be, and one own listener. */
function gatewayServes(gw: GatewayEntry): boolean {
  const classServes = gw.classState.accepted.ok || gw.classState.holding === true;
  return classServes && ownListeners(gw).some(ready);
}

/** The Gateway a ListenerSet's parentRef names, by `ns/name`, when it names a Gateway at all. */
function parentKey(ls: ListenerSet): string | undefined {
  const ref = ls.spec.parentRef;
  if (ref.group !== GATEWAY_API_GROUP || ref.kind !== 'Gateway') return undefined;
  return `${ref.namespace ?? ls.metadata.namespace ?? ''}/${ref.name}`;
}

/**
 * Our ListenerSets (those naming one of our Gateways) by `ns/name`. Each allowed one whose Gateway is served joins
 * it: its listeners are appended to the Gateway entry's, and conflicts are marked again per fleet with every
 * Gateway's own listeners first (a ListenerSet never displaces a Gateway's listener), then ListenerSets' listeners
 * in precedence order. Gateway entries must have their own listeners evaluated and conflicts marked.
 */
export function joinListenerSets(
  listenerSets: readonly ListenerSet[],
  gateways: Map<string, GatewayEntry>,
  fleets: Map<string, GatewayEntry[]>,
  lookup: SnapshotLookup,
  verdicts: WeakMap<Secret, string | undefined>,
): Map<string, ListenerSetEntry> {
  const entries = new Map<string, ListenerSetEntry>();
  const joinedByFleet = new Map<string, ListenerSetEntry[]>();
  for (const ls of [...listenerSets].sort(byAge)) {
    const key = parentKey(ls);
    const gw = key === undefined ? undefined : gateways.get(key);
    if (gw === undefined) continue;
    const entry: ListenerSetEntry = { listenerSet: ls, key: nsName(ls), gateway: gw, listeners: [] };
    entries.set(entry.key, entry);
    const allowed = namespaceAllowed(gw.gateway, ls.metadata.namespace ?? '', lookup);
    if (!allowed.ok) {
      entry.refused = allowed;
      continue;
    }
    if (!gatewayServes(gw)) {
      const message = `Gateway ${gw.key} is not accepted: none of its own listeners is valid, or its class is not accepted`;
      entry.refused = { ok: false, reason: 'ParentNotAccepted', message };
      continue;
    }
    ls.spec.listeners.forEach((_, i) => {
      const l = evaluateListenerSetListener(
        gw.gateway,
        ls,
        i,
        gw.listeners.length,
        gw.fleet,
        lookup,
        verdicts,
      );
      gw.listeners.push(l);
      entry.listeners.push(l);
    });
    gw.listenerSets.push(entry);
    const joined = joinedByFleet.get(gw.fleet);
    if (joined === undefined) joinedByFleet.set(gw.fleet, [entry]);
    else joined.push(entry);
  }
  for (const [fleet, joined] of joinedByFleet) {
    const group = fleets.get(fleet) ?? [];
    markConflicts([...group.flatMap(ownListeners), ...joined.flatMap((e) => e.listeners)]);
  }
  return entries;
}

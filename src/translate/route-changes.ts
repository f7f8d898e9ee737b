// A few routes changed among thousands, translated by those routes alone: when every other input is the very
// same as in the last translation and the snapshot says how its route lists came from the last ones, only the
// changed routes are attached, placed in their listeners' lists, built into their VirtualHosts and given their
// statuses; the rest of the last translation stands. The output is the full translation's (tests compare them).
import { objectId } from '../api/kinds.js';
import type { RouteObject } from '../api/route-kinds.js';
import type { ListChange } from '../api/snapshot.js';
import { insertionIndex } from '../platform/sorted-search.js';
import type { ListenerState } from './listeners.js';
import { nsName } from './object-order.js';
import { attachOne, type RouteState } from './routes.js';
import { routeStatus } from './status.js';
import type { ObjectStatus, RouteWorld, TranslateMemos } from './types.js';

/** Past this many changed routes the full translation is about as cheap (and bounded). */
export const MAX_ROUTE_CHANGES = 1024;

/** What turned `from` into `to`, composed from `steps`; undefined when the steps do not lead from one to the other. */
export function composeRouteChange<T>(
  steps: readonly ListChange<T>[] | undefined,
  from: unknown,
  to: readonly T[],
): { removed: T[]; added: T[] } | undefined {
  if (from === to) return { removed: [], added: [] };
  const start = steps?.findIndex((s) => s.from === from) ?? -1;
  if (steps === undefined || start === -1) return undefined;
  const removed = new Set<T>();
  const added = new Set<T>();
  let at: readonly T[] = steps[start]!.from;
  for (const step of steps.slice(start)) {
    if (step.from !== at) return undefined;
    for (const r of step.removed) {
      if (added.has(r)) added.delete(r);
      else removed.add(r);
    }
    for (const a of step.added) {
      if (removed.has(a)) removed.delete(a);
      else added.add(a);
    }
    at = step.to;
    if (at === to) return { removed: [...removed], added: [...added] };
  }
  return undefined;
}

/** HTTPRoutes before GRPCRoutes, each in namespace/name order: a listener's `attached` order. */
function compareAttached(a: RouteObject, b: RouteObject): number {
  if (a.kind !== b.kind) return a.kind === 'HTTPRoute' ? -1 : 1;
  const ka = nsName(a);
  const kb = nsName(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** Takes the removed routes off their listeners and puts the added on theirs; the listeners touched. */
export function reattach(
  world: RouteWorld,
  removed: readonly RouteObject[],
  added: readonly RouteObject[],
): { touched: Set<ListenerState>; removedStates: RouteState[]; addedStates: RouteState[] } | undefined {
  const touched = new Set<ListenerState>();
  const listenerOf = (gatewayKey: string, index: number) => world.gateways.get(gatewayKey)!.listeners[index]!;
  const removedStates: RouteState[] = [];
  for (const route of removed) {
    const rs = world.routes.get(route);
    if (rs === undefined) return undefined;
    removedStates.push(rs);
    for (const { gatewayKey, index } of rs.attachedTo) {
      const l = listenerOf(gatewayKey, index);
      const at = insertionIndex(l.attached, route, compareAttached);
      if (l.attached[at] === route) l.attached.splice(at, 1);
      touched.add(l);
    }
    world.routes.delete(route);
  }
  const addedStates: RouteState[] = [];
  for (const route of added) {
    const rs = attachOne(route, world.attach);
    addedStates.push(rs);
    world.routes.set(route, rs);
    for (const { gatewayKey, index } of rs.attachedTo) {
      const l = listenerOf(gatewayKey, index);
      const at = insertionIndex(l.attached, route, compareAttached);
      if (l.attached[at] !== route) l.attached.splice(at, 0, route);
      touched.add(l);
    }
  }
  return { touched, removedStates, addedStates };
}

/** Both route kinds on one listener: their hostnames may conflict, which only the full translation settles. */
export function mixedKinds(touched: Iterable<ListenerState>): boolean {
  for (const l of touched)
    if (l.attached.length > 0 && l.attached[0]!.kind !== l.attached.at(-1)!.kind) return true;
  return false;
}

const statusOrder = (a: ObjectStatus, b: ObjectStatus): number => {
  if (a.kind !== b.kind) return a.kind === 'HTTPRoute' ? -1 : 1;
  const ka = `${a.namespace ?? ''}/${a.name}`;
  const kb = `${b.namespace ?? ''}/${b.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
};

/**
 * The route statuses after the change (the same order as the full translation's), with the statuses that are
 * new and those gone; undefined when the last list is not as expected.
 */
export function changedRouteStatuses(
  last: readonly ObjectStatus[],
  removedStates: readonly RouteState[],
  addedStates: readonly RouteState[],
  memo: TranslateMemos['routeStatuses'],
): { list: ObjectStatus[]; changed: ObjectStatus[]; removed: ObjectStatus[] } | undefined {
  const list = last.slice();
  const gone: ObjectStatus[] = [];
  for (const rs of removedStates) {
    const s = routeStatus(rs, memo);
    if (s === undefined) continue;
    const at = insertionIndex(list, s, statusOrder);
    if (list[at] !== s) return undefined;
    list.splice(at, 1);
    gone.push(s);
  }
  const changed: ObjectStatus[] = [];
  for (const rs of addedStates) {
    const s = routeStatus(rs, memo);
    if (s === undefined) continue;
    list.splice(insertionIndex(list, s, statusOrder), 0, s);
    changed.push(s);
  }
  const now = new Set(changed.map(statusId));
  const removed = gone.filter((s) => !now.has(statusId(s)));
  return { list, changed, removed };
}

const statusId = (s: ObjectStatus): string => objectId(s.kind, s.name, s.namespace);

/** Every changed route has a namespace (the API server's always do): the orders above then agree. */
export function placeable(changes: readonly { removed: RouteObject[]; added: RouteObject[] }[]): boolean {
  let count = 0;
  for (const c of changes) {
    count += c.removed.length + c.added.length;
    for (const r of [...c.removed, ...c.added]) if (r.metadata.namespace === undefined) return false;
  }
  return count <= MAX_ROUTE_CHANGES;
}

// Changing a FleetConfig by named resources, keeping every untouched object: the proxy recompiles only objects
// it has not seen, so both the discovery client (patching what the server sent) and a proxy's workers (sent
// what changed by their primary) build configs this way.

import { partitionPoint } from '../platform/sorted-search.js';
import {
  FLEET_RESOURCE_TYPES,
  type FleetConfig,
  type FleetResourceType,
  isFleetResourceType,
} from './fleet-config.js';

/** A resource put into a config: its type, name and value. */
export interface ChangedResource {
  type: FleetResourceType;
  name: string;
  value: { name: string };
}

/**
 * Which resources changed from one config of a fleet (`since`) to the next (`config`): every resource of
 * `config` not named in `changed` is the very same object as in `since`, and `removed` are in `since` only. A
 * producer that cannot say so exactly gives none (the consumer then compares the configs itself).
 */
export interface FleetConfigChange {
  since: FleetConfig;
  config: FleetConfig;
  changed: { type: FleetResourceType; name: string }[];
  removed: { type: FleetResourceType; name: string }[];
}

export interface FleetConfigDelta {
  changed: ChangedResource[];
  removed: { type: FleetResourceType; name: string }[];
}

/**
 * `previous` (as assembled before) with `changed` resources put in and `removed` ones taken out, keeping every
 * list sorted by name; lists of untouched types are the previous arrays, and untouched resources the previous
 * objects, so the proxy recompiles only what changed. `previous` is not modified.
 */
export function patchFleetConfig(
  previous: FleetConfig,
  changed: readonly ChangedResource[],
  removed: readonly { type: string; name: string }[],
): FleetConfig {
  const lists = new Map<FleetResourceType, { name: string }[]>();
  const listOf = (type: FleetResourceType): { name: string }[] => {
    let list = lists.get(type);
    if (list === undefined) {
      list = (previous[type] as { name: string }[]).slice();
      lists.set(type, list);
    }
    return list;
  };
  for (const resource of changed) {
    const list = listOf(resource.type);
    const at = nameIndex(list, resource.name);
    if (list[at]?.name === resource.name) list[at] = resource.value;
    else list.splice(at, 0, resource.value);
  }
  for (const key of removed) {
    if (!isFleetResourceType(key.type)) continue;
    const list = listOf(key.type);
    const at = nameIndex(list, key.name);
    if (list[at]?.name === key.name) list.splice(at, 1);
  }
  return { ...previous, ...Object.fromEntries(lists) } as FleetConfig;
}

/** The item named `name` in a list sorted by name, by binary search; undefined when none is. */
export function findByName<T extends { name: string }>(list: readonly T[], name: string): T | undefined {
  const item = list[nameIndex(list, name)];
  return item?.name === name ? item : undefined;
}

/** First index whose name is not below `name` (lists sorted as assembleFleetConfig sorts them). */
export function nameIndex(list: readonly { name: string }[], name: string): number {
  return partitionPoint(list.length, (i) => list[i]!.name < name);
}

/**
 * What turns `previous` into `next` when both were built this way: resources compared by identity (an object
 * kept is unchanged), so the delta costs one Map lookup per resource and no serialisation.
 */
export function fleetConfigDelta(previous: FleetConfig, next: FleetConfig): FleetConfigDelta {
  const changed: ChangedResource[] = [];
  const removed: FleetConfigDelta['removed'] = [];
  for (const type of FLEET_RESOURCE_TYPES) {
    const before = previous[type] as readonly { name: string }[];
    const after = next[type] as readonly { name: string }[];
    if (before === after) continue;
    const byName = new Map(before.map((item) => [item.name, item]));
    for (const item of after) {
      if (byName.get(item.name) !== item) changed.push({ type, name: item.name, value: item });
      byName.delete(item.name);
    }
    for (const name of byName.keys()) removed.push({ type, name });
  }
  return { changed, removed };
}

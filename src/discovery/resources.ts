// A FleetConfig as a set of named resources: what discovery diffs, sends and reassembles.
import {
  FLEET_CONFIG_SCHEMA_VERSION,
  FLEET_RESOURCE_TYPES,
  type FleetConfig,
  type FleetResourceType,
  isFleetResourceType,
} from '../ir/fleet-config.js';
import { type FleetConfigChange, findByName } from '../ir/fleet-config-patch.js';
import { PorticoError } from '../platform/errors.js';

export interface NamedResource {
  type: FleetResourceType;
  name: string;
  /** The resource as JSON text: compared to detect changes, sent as the body. */
  json: string;
}

/** Resources keyed by `<type>\u0000<name>` (NUL cannot occur in a name, so keys never collide). */
export type ResourceSet = Map<string, NamedResource>;

export function resourceKey(type: string, name: string): string {
  return `${type}\u0000${name}`;
}

// Fleet configs are immutable once built, so a resource object the translator reuses is serialised once.
const serialised = new WeakMap<object, string>();

function jsonOf(item: object): string {
  let json = serialised.get(item);
  if (json === undefined) {
    json = JSON.stringify(item);
    serialised.set(item, json);
  }
  return json;
}

/** Splits a FleetConfig into its named resources. The config must not be mutated afterwards. */
export function toResourceSet(config: FleetConfig): ResourceSet {
  const set: ResourceSet = new Map();
  for (const type of FLEET_RESOURCE_TYPES) {
    for (const item of config[type]) {
      set.set(resourceKey(type, item.name), { type, name: item.name, json: jsonOf(item) });
    }
  }
  return set;
}

/** A resource as the server holds it: with the config object it was serialised from (compared by identity). */
export interface ServedResource extends NamedResource {
  item: object;
}

export type ServedResourceSet = Map<string, ServedResource>;

/**
 * Makes `set` hold `config`'s resources and returns what changed. Objects the translator reused (the same
 * object as last time) are skipped without serialising or comparing: an edit costs what it changed plus one
 * Map lookup per resource.
 */
export function updateResourceSet(
  set: ServedResourceSet,
  config: FleetConfig,
  previous?: FleetConfig,
  change?: FleetConfigChange,
): ResourceDelta {
  if (
    change !== undefined &&
    previous !== undefined &&
    change.since === previous &&
    change.config === config
  ) {
    return updateByChange(set, config, change);
  }
  const changed: NamedResource[] = [];
  const sizeBefore = set.size;
  let matched = 0;
  for (const type of FLEET_RESOURCE_TYPES) {
    const list: readonly { name: string }[] = config[type];
    // The translator hands back the same list when nothing of a type changed.
    if (previous !== undefined && previous[type] === list) {
      matched += list.length;
      continue;
    }
    // Walk last time's list alongside (both sorted by name): an object found again is unchanged, no key built.
    const last: readonly { name: string }[] = previous?.[type] ?? [];
    let k = 0;
    for (const item of list) {
      if (last[k] !== item) while (k < last.length && last[k]!.name < item.name) k++;
      if (last[k] === item) {
        k++;
        matched++;
        continue;
      }
      if (last[k]?.name === item.name) k++;
      const key = resourceKey(type, item.name);
      const before = set.get(key);
      if (before !== undefined) matched++;
      const resource = serve(set, key, before, type, item);
      if (resource !== undefined) changed.push(resource);
    }
  }
  const removed: ResourceDelta['removed'] = [];
  // Every resource of last time was seen again: nothing was removed (the common case, no second pass).
  if (matched < sizeBefore) {
    const present = new Set<string>();
    for (const type of FLEET_RESOURCE_TYPES)
      for (const item of config[type]) present.add(resourceKey(type, item.name));
    for (const [key, resource] of set) {
      if (present.has(key)) continue;
      set.delete(key);
      removed.push({ type: resource.type, name: resource.name });
    }
    removed.sort(byTypeOrder);
  }
  return { changed, removed };
}

/** Puts `item` in the set under `key`; the served resource when its content is new, undefined when the same. */
function serve(
  set: ServedResourceSet,
  key: string,
  before: ServedResource | undefined,
  type: FleetResourceType,
  item: { name: string },
): ServedResource | undefined {
  if (before?.item === item) return undefined;
  const json = jsonOf(item);
  if (before !== undefined && before.json === json) {
    before.item = item;
    return undefined;
  }
  const resource: ServedResource = { type, name: item.name, json, item };
  set.set(key, resource);
  return resource;
}

const byTypeOrder = (a: { type: FleetResourceType }, b: { type: FleetResourceType }): number =>
  FLEET_RESOURCE_TYPES.indexOf(a.type) - FLEET_RESOURCE_TYPES.indexOf(b.type);

/** The set updated by the resources the change names (the others are the same objects): an edit costs its own. */
function updateByChange(
  set: ServedResourceSet,
  config: FleetConfig,
  change: FleetConfigChange,
): ResourceDelta {
  const changed: NamedResource[] = [];
  for (const { type, name } of change.changed) {
    const item = findByName(config[type] as readonly { name: string }[], name);
    if (item === undefined) continue;
    const key = resourceKey(type, name);
    const resource = serve(set, key, set.get(key), type, item);
    if (resource !== undefined) changed.push(resource);
  }
  const removed: ResourceDelta['removed'] = [];
  for (const { type, name } of change.removed)
    if (set.delete(resourceKey(type, name))) removed.push({ type, name });
  changed.sort(byTypeOrder);
  removed.sort(byTypeOrder);
  return { changed, removed };
}

export interface ResourceDelta {
  changed: NamedResource[];
  removed: { type: FleetResourceType; name: string }[];
}

/** What turns `before` into `after`: added or changed resources, and removed ones, in type order. */
export function diffResources(before: ResourceSet, after: ResourceSet): ResourceDelta {
  const changed: NamedResource[] = [];
  const removed: ResourceDelta['removed'] = [];
  for (const [key, resource] of after) {
    if (before.get(key)?.json !== resource.json) changed.push(resource);
  }
  for (const [key, resource] of before) {
    if (!after.has(key)) removed.push({ type: resource.type, name: resource.name });
  }
  changed.sort(byTypeOrder);
  removed.sort(byTypeOrder);
  return { changed, removed };
}

/** A received resource: its JSON text and the parsed value (parsed once, when it arrives). */
export interface ReceivedResource extends NamedResource {
  value: { name: string };
}

/** Reassembles a FleetConfig; every list sorted by name, as the contract requires. */
export function assembleFleetConfig(fleet: string, resources: Iterable<ReceivedResource>): FleetConfig {
  const lists: Record<FleetResourceType, { name: string }[]> = {
    gateways: [],
    secrets: [],
    clusters: [],
    endpoints: [],
    policies: [],
    virtualHosts: [],
    listeners: [],
  };
  for (const resource of resources) lists[resource.type].push(resource.value);
  for (const list of Object.values(lists))
    list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // Only the structure is checked here; the proxy's apply validates every field and Nacks what is wrong.
  return { schemaVersion: FLEET_CONFIG_SCHEMA_VERSION, fleet, ...lists } as unknown as FleetConfig;
}

/** Parses one received body; a clear error names the resource when it is not a JSON object with that name. */
export function parseResource(type: string, name: string, body: Buffer): ReceivedResource {
  if (!isFleetResourceType(type))
    throw new PorticoError('E_FLEET_CONFIG', `resource ${type}/${name}: unknown resource type '${type}'`);
  const json = body.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new PorticoError(
      'E_FLEET_CONFIG',
      `resource ${type}/${name}: body is not JSON: ${(error as Error).message}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PorticoError('E_FLEET_CONFIG', `resource ${type}/${name}: body is not a JSON object`);
  }
  if ((value as { name?: unknown }).name !== name) {
    throw new PorticoError(
      'E_FLEET_CONFIG',
      `resource ${type}/${name}: body field 'name' does not match the resource name`,
    );
  }
  return { type, name, json, value: value as { name: string } };
}

// The check the discovery server makes of a fleet config it is handed: translator output, so a malformed one is
// a bug, reported with the field.

import { FLEET_RESOURCE_TYPES, type FleetConfig } from '../ir/fleet-config.js';
import { type FleetConfigChange, nameIndex } from '../ir/fleet-config-patch.js';
import { PorticoError } from '../platform/errors.js';

/**
 * Every list is a list of uniquely named items. With `change` (from a config checked before), only the lists that
 * changed and, in them, the named items and their neighbours are looked at: the rest was checked already.
 */
export function checkFleetConfig(config: FleetConfig, change?: FleetConfigChange): void {
  if (typeof config.fleet !== 'string' || config.fleet === '') {
    throw new PorticoError('E_FLEET_CONFIG', 'setFleet: fleet config has no fleet key');
  }
  const checked = change !== undefined && checkedShapes.has(change.since) && change.config === config;
  for (const type of FLEET_RESOURCE_TYPES) {
    if (checked && config[type] === change.since[type]) continue;
    const list: unknown = config[type];
    if (!Array.isArray(list))
      throw new PorticoError('E_FLEET_CONFIG', `setFleet: fleet '${config.fleet}': ${type} is not a list`);
    if (checked && changedInOrder(change, type, list)) continue;
    if (!namesSorted(config.fleet, type, list)) checkNamesUnique(config.fleet, type, list);
  }
  checkedShapes.add(config);
}

// Configs checked whole (or by their change from one that was): a change from one of them checks only itself.
const checkedShapes = new WeakSet<FleetConfig>();

/** Each changed item of `type` is named and sits strictly between its neighbours' names (the rest is as checked). */
function changedInOrder(change: FleetConfigChange, type: string, list: unknown[]): boolean {
  const names = list as { name?: unknown }[];
  for (const c of change.changed) {
    if (c.type !== type) continue;
    const at = nameIndex(names as { name: string }[], c.name);
    if (names[at]?.name !== c.name) return false;
    const before = names[at - 1]?.name;
    const after = names[at + 1]?.name;
    if (
      (typeof before === 'string' && !(before < c.name)) ||
      (typeof after === 'string' && !(c.name < after))
    )
      return false;
  }
  return true;
}

/** Names in strictly increasing order (the contract's sort) are unique without a Set of them all. */
function namesSorted(fleet: string, type: string, list: unknown[]): boolean {
  let sorted = true;
  let previous = '';
  for (const [i, item] of list.entries()) {
    const name = (item as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || name === '') {
      throw new PorticoError('E_FLEET_CONFIG', `setFleet: fleet '${fleet}': ${type}[${i}].name is missing`);
    }
    if (i > 0 && !(previous < name)) sorted = false;
    previous = name;
  }
  return sorted;
}

function checkNamesUnique(fleet: string, type: string, list: unknown[]): void {
  const seen = new Set<string>();
  for (const [i, item] of list.entries()) {
    const name = (item as { name: string }).name;
    if (seen.has(name)) {
      throw new PorticoError(
        'E_FLEET_CONFIG',
        `setFleet: fleet '${fleet}': ${type}[${i}].name '${name}' is not unique`,
      );
    }
    seen.add(name);
  }
}

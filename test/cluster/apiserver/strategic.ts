// Strategic merge patch for built-in kinds: lists with a merge key merge by it, other lists are replaced.
import { clone, isJsonObject, type JsonObject } from './object.js';

/** Merge keys of the built-in list fields kubectl and controllers patch, by field name. */
export const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  imagePullSecrets: 'name',
  conditions: 'type',
  ownerReferences: 'uid',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  // Service and container ports: `port` for services, `containerPort` for containers (chosen per item).
  ports: 'port',
};

function keyFor(field: string, items: unknown[]): string | undefined {
  const key = MERGE_KEYS[field];
  if (field === 'ports' && items.some((i) => isJsonObject(i) && 'containerPort' in i)) return 'containerPort';
  return key;
}

function mergeList(field: string, target: unknown[], patch: unknown[]): unknown[] {
  const key = keyFor(field, [...patch, ...target]);
  if (key === undefined || !patch.every(isJsonObject)) return clone(patch);
  const out = clone(target);
  for (const item of patch as JsonObject[]) {
    const directive = item.$patch;
    const index = out.findIndex((t) => isJsonObject(t) && t[key] === item[key]);
    if (directive === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) out[index] = strategicMerge(out[index], item);
    else out.push(strategicMerge({}, item));
  }
  return out;
}

export function strategicMerge(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return clone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return clone(rest);
  }
  const out: JsonObject = isJsonObject(target) ? clone(target) : {};
  const order: Record<string, unknown[]> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$patch' || key === '$retainKeys') continue;
    if (key.startsWith('$setElementOrder/')) {
      if (Array.isArray(value)) order[key.slice('$setElementOrder/'.length)] = value;
      continue;
    }
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      const current = out[field];
      if (Array.isArray(current) && Array.isArray(value))
        out[field] = current.filter((v) => !value.includes(v));
      continue;
    }
    if (value === null) delete out[key];
    else if (Array.isArray(value) && Array.isArray(out[key]))
      out[key] = mergeList(key, out[key] as unknown[], value);
    else if (isJsonObject(value)) out[key] = strategicMerge(out[key], value);
    else out[key] = clone(value);
  }
  for (const [field, wanted] of Object.entries(order)) {
    const list = out[field];
    const key = Array.isArray(list) ? keyFor(field, list) : undefined;
    if (!Array.isArray(list) || key === undefined) continue;
    const rank = (item: unknown) => {
      const i = wanted.findIndex((w) => isJsonObject(w) && isJsonObject(item) && w[key] === item[key]);
      return i < 0 ? wanted.length : i;
    };
    out[field] = [...list].sort((a, b) => rank(a) - rank(b));
  }
  return out;
}

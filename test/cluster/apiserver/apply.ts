// Server-side apply, a faithful-enough subset: field ownership per Apply manager, conflicts, force,
// removal of fields a manager stops applying. `Update` managers are recorded but never conflict.
import { clone, isJsonObject, type JsonObject, type KubeObject } from './object.js';
import { MERGE_KEYS } from './strategic.js';

/** Segments like `f:spec`, `k:{"name":"web"}`; a path names a leaf field or an associative-list item. */
type FieldPath = string[];

const UNTRACKED_METADATA = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'deletionTimestamp',
]);

function listKey(field: string, items: unknown[], builtin: boolean): string | undefined {
  if (!builtin || !items.every(isJsonObject)) return undefined;
  if (field === 'ports' && items.some((i) => isJsonObject(i) && 'containerPort' in i)) return 'containerPort';
  return MERGE_KEYS[field];
}

function itemSegment(key: string, item: JsonObject): string {
  return `k:${JSON.stringify({ [key]: item[key] })}`;
}

function collect(value: unknown, prefix: FieldPath, builtin: boolean, out: FieldPath[]): void {
  if (!isJsonObject(value) || Object.keys(value).length === 0) {
    out.push(prefix);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    if (prefix.length === 0 && (k === 'apiVersion' || k === 'kind')) continue;
    if (prefix.length === 1 && prefix[0] === 'f:metadata' && UNTRACKED_METADATA.has(k)) continue;
    const here = [...prefix, `f:${k}`];
    const key = Array.isArray(v) ? listKey(k, v, builtin) : undefined;
    if (Array.isArray(v) && key !== undefined) {
      for (const item of v as JsonObject[]) {
        const at = [...here, itemSegment(key, item)];
        out.push(at);
        collect(item, at, builtin, out);
      }
    } else {
      collect(v, here, builtin, out);
    }
  }
}

export function fieldPaths(applied: JsonObject, builtin: boolean): FieldPath[] {
  const out: FieldPath[] = [];
  collect(applied, [], builtin, out);
  return out.filter((p) => p.length > 0);
}

function toFieldsV1(paths: FieldPath[]): JsonObject {
  const root: JsonObject = {};
  for (const p of paths) {
    let node = root;
    for (const seg of p) {
      const next = isJsonObject(node[seg]) ? (node[seg] as JsonObject) : {};
      node[seg] = next;
      node = next;
    }
    if (p[p.length - 1]?.startsWith('k:')) node['.'] = {};
  }
  return root;
}

function fromFieldsV1(node: JsonObject, prefix: FieldPath, out: FieldPath[]): void {
  const children = Object.keys(node).filter((k) => k !== '.');
  if ((children.length === 0 || '.' in node) && prefix.length > 0) out.push(prefix);
  for (const k of children) {
    const child = node[k];
    if (isJsonObject(child)) fromFieldsV1(child, [...prefix, k], out);
  }
}

function step(value: unknown, seg: string): unknown {
  if (seg.startsWith('f:')) return isJsonObject(value) ? value[seg.slice(2)] : undefined;
  const want = JSON.parse(seg.slice(2)) as JsonObject;
  if (!Array.isArray(value)) return undefined;
  return value.find((i) => isJsonObject(i) && Object.entries(want).every(([k, v]) => i[k] === v));
}

function valueAt(object: unknown, path: FieldPath): unknown {
  return path.reduce<unknown>((v, seg) => step(v, seg), object);
}

function removePath(object: JsonObject, path: FieldPath): void {
  const parent = valueAt(object, path.slice(0, -1));
  const last = path[path.length - 1] ?? '';
  if (last.startsWith('f:') && isJsonObject(parent)) delete parent[last.slice(2)];
  else if (last.startsWith('k:') && Array.isArray(parent)) {
    const item = step(parent, last);
    const i = parent.indexOf(item);
    if (i >= 0) parent.splice(i, 1);
  }
}

function mergeApplied(target: unknown, applied: unknown, field: string, builtin: boolean): unknown {
  if (Array.isArray(applied) && Array.isArray(target)) {
    const key = listKey(field, [...applied, ...target], builtin);
    if (key === undefined) return clone(applied);
    const out = clone(target) as JsonObject[];
    for (const item of applied as JsonObject[]) {
      const i = out.findIndex((t) => t[key] === item[key]);
      if (i >= 0) out[i] = mergeApplied(out[i], item, '', builtin) as JsonObject;
      else out.push(clone(item));
    }
    return out;
  }
  if (!isJsonObject(applied) || !isJsonObject(target)) return clone(applied);
  const out = clone(target);
  for (const [k, v] of Object.entries(applied)) out[k] = mergeApplied(out[k], v, k, builtin);
  return out;
}

interface ManagedEntry {
  manager: string;
  operation: string;
  paths: FieldPath[];
  raw: JsonObject;
}

function entriesOf(object: KubeObject | undefined): ManagedEntry[] {
  return (object?.metadata.managedFields ?? []).filter(isJsonObject).map((raw) => {
    const paths: FieldPath[] = [];
    if (isJsonObject(raw.fieldsV1)) fromFieldsV1(raw.fieldsV1, [], paths);
    return { manager: String(raw.manager ?? ''), operation: String(raw.operation ?? ''), paths, raw };
  });
}

const id = (p: FieldPath) => p.join('\u0000');

export type ApplyResult = { ok: true; object: KubeObject } | { ok: false; conflicts: string[] };

/** Applies `applied` on top of `existing` (or creates it) for `manager`. */
export function serverSideApply(
  existing: KubeObject | undefined,
  applied: KubeObject,
  manager: string,
  force: boolean,
  builtin: boolean,
  now: string,
): ApplyResult {
  const entries = entriesOf(existing);
  const mine = new Set(fieldPaths(applied, builtin).map(id));
  const newPaths = fieldPaths(applied, builtin);
  const conflicts: string[] = [];
  const others = entries.filter((e) => e.manager !== manager);
  for (const other of others.filter((e) => e.operation === 'Apply')) {
    const clashing = other.paths.filter(
      (p) => mine.has(id(p)) && JSON.stringify(valueAt(existing, p)) !== JSON.stringify(valueAt(applied, p)),
    );
    if (clashing.length === 0) continue;
    if (!force) {
      for (const p of clashing)
        conflicts.push(`conflict with "${other.manager}": .${p.map((s) => s.slice(2)).join('.')}`);
    } else {
      other.paths = other.paths.filter((p) => !mine.has(id(p)));
    }
  }
  if (conflicts.length > 0) return { ok: false, conflicts };
  const base: KubeObject = existing === undefined ? { metadata: {} } : clone(existing);
  const merged = mergeApplied(base, applied, '', builtin) as KubeObject;
  const previous = entries.find((e) => e.manager === manager && e.operation === 'Apply');
  const ownedByOthers = new Set(others.flatMap((e) => e.paths.map(id)));
  for (const p of previous?.paths ?? []) {
    if (!mine.has(id(p)) && !ownedByOthers.has(id(p))) removePath(merged, p);
  }
  const managed: JsonObject[] = others
    .filter((e) => e.paths.length > 0)
    .map((e) => ({ ...e.raw, fieldsV1: toFieldsV1(e.paths) }));
  managed.push({
    manager,
    operation: 'Apply',
    apiVersion: applied.apiVersion ?? '',
    time: now,
    fieldsType: 'FieldsV1',
    fieldsV1: toFieldsV1(newPaths),
  });
  merged.metadata.managedFields = managed;
  return { ok: true, object: merged };
}

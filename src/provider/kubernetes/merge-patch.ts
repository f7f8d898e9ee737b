// The JSON merge patch (RFC 7386) that turns one JSON value into another: only the keys that differ, a removed
// key as null, a list whole (merge patch has no list operations). A status write then sends what changed.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && same(a[k], b[k]));
  }
  return false;
}

/**
 * The merge patch from `before` to `after` (both objects); undefined when they are equal. Values that are null in
 * `after` cannot be expressed (null removes), so `after` must not hold any: statuses do not.
 */
export function mergePatch(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, Json> | undefined {
  const patch: Record<string, Json> = {};
  for (const key of Object.keys(before)) if (!(key in after) || after[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(after)) {
    if (value === undefined) continue;
    const was = before[key];
    if (same(was, value)) continue;
    const inner = isObject(was) && isObject(value) ? mergePatch(was, value) : undefined;
    patch[key] = (inner ?? value) as Json;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

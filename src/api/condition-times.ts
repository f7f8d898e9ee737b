// The translator emits conditions without lastTransitionTime (it has no clock); status writers stamp them here.
// A condition keeps its previous time while its status is unchanged, as the Kubernetes API conventions ask.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Status lists are matched by identity, not position: listeners by name, route parents by parentRef.
function itemKey(item: JsonObject): string | undefined {
  if (typeof item.type === 'string' && typeof item.status === 'string') return `condition:${item.type}`;
  if (typeof item.name === 'string') return `name:${item.name}`;
  if (item.parentRef !== undefined)
    return `parent:${JSON.stringify(item.parentRef)}:${String(item.controllerName)}`;
  return undefined;
}

function stampList(previous: Json | undefined, next: Json[], now: string): Json[] {
  const before = new Map<string, JsonObject>();
  if (Array.isArray(previous)) {
    for (const item of previous) {
      if (!isObject(item)) continue;
      const key = itemKey(item);
      if (key !== undefined) before.set(key, item);
    }
  }
  return next.map((item) => {
    if (!isObject(item)) return item;
    const key = itemKey(item);
    const old = key === undefined ? undefined : before.get(key);
    if (key?.startsWith('condition:')) {
      const oldTime = old !== undefined && old.status === item.status ? old.lastTransitionTime : undefined;
      return { ...item, lastTransitionTime: typeof oldTime === 'string' ? oldTime : now };
    }
    return stampValue(old, item, now);
  });
}

function stampValue(previous: Json | undefined, next: JsonObject, now: string): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(next)) {
    const old = isObject(previous) ? previous[key] : undefined;
    if (Array.isArray(value)) out[key] = stampList(old, value, now);
    else if (isObject(value)) out[key] = stampValue(old, value, now);
    else out[key] = value;
  }
  return out;
}

/** Adds `lastTransitionTime` to every condition in `next`, reusing the previous time where status is unchanged. */
export function stampConditionTimes<T extends object>(previous: object | undefined, next: T, now: Date): T {
  return stampValue(
    previous as JsonObject | undefined,
    next as unknown as JsonObject,
    now.toISOString(),
  ) as T;
}

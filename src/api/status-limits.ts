// The status fields' limits of the Gateway API CRDs and metav1.Condition: a status over any of them is refused
// whole by the API server, so whatever goes into a status (a route's long message, a proxy's error) is cut here.

/** metav1.Condition.message maxLength, in characters. */
export const MAX_CONDITION_MESSAGE = 32_768;
/** metav1.Condition.reason maxLength. */
export const MAX_CONDITION_REASON = 1_024;
const MAX_ITEMS = {
  conditions: 8,
  addresses: 16,
  listeners: 64,
  supportedKinds: 8,
  parents: 32,
  supportedFeatures: 64,
} as const;

/** `text` within `max` characters, a marker included; a surrogate pair is never split. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = ` …[cut: ${text.length} characters]`;
  let end = Math.max(0, max - marker.length);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}${marker}`;
}

type JsonRecord = Record<string, unknown>;

const isRecord = (value: unknown): value is JsonRecord =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function boundedCondition(condition: unknown): unknown {
  if (!isRecord(condition)) return condition;
  const out = { ...condition };
  if (typeof out.message === 'string') out.message = cutText(out.message, MAX_CONDITION_MESSAGE);
  if (typeof out.reason === 'string' && out.reason.length > MAX_CONDITION_REASON) {
    out.reason = out.reason.slice(0, MAX_CONDITION_REASON);
  }
  return out;
}

/** A copy of `value` with its lists cut to their maxItems and its conditions to their lengths. */
function bounded(value: JsonRecord): JsonRecord {
  const out: JsonRecord = { ...value };
  for (const [field, max] of Object.entries(MAX_ITEMS)) {
    const list = out[field];
    if (!Array.isArray(list)) continue;
    const kept = list.slice(0, max);
    out[field] =
      field === 'conditions'
        ? kept.map(boundedCondition)
        : kept.map((item: unknown) => (isRecord(item) ? bounded(item) : item));
  }
  return out;
}

/**
 * A status (of a GatewayClass, Gateway or route) the API server accepts: conditions' messages and reasons cut
 * to metav1.Condition's lengths, and every list (conditions, addresses, listeners, supportedKinds, parents,
 * supportedFeatures) to its CRD's maxItems, the first items kept.
 */
export function withinStatusLimits(status: JsonRecord): JsonRecord {
  return bounded(status);
}

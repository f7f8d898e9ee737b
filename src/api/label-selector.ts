// Kubernetes label selector semantics (matchLabels and matchExpressions, all must hold).
import type { LabelSelector } from './common.js';

export function selectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const values = e.values ?? [];
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
    if (e.operator === 'In' && (!has || !values.includes(value ?? ''))) return false;
    if (e.operator === 'NotIn' && has && values.includes(value ?? '')) return false;
  }
  return true;
}

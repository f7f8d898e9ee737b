// Label selectors (=, ==, !=, in, notin, exists, !exists) and field selectors (metadata.name/namespace).

import type { KubeObject } from './object.js';
import { badRequest } from './status.js';

export type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' };

export type Predicate = (object: KubeObject) => boolean;

/** Splits on commas that are not inside `( ... )`. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms.map((t) => t.trim()).filter((t) => t !== '');
}

export function parseLabelSelector(text: string): Requirement[] {
  const out: Requirement[] = [];
  for (const term of splitTerms(text)) {
    const set = /^([^\s!=()]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
    if (set !== null) {
      const values = (set[3] ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
      out.push({ key: set[1] ?? '', op: set[2] === 'in' ? 'in' : 'notin', values });
      continue;
    }
    const eq = /^([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=()]*)$/.exec(term);
    if (eq !== null) {
      out.push({ key: eq[1] ?? '', op: eq[2] === '!=' ? 'notin' : 'in', values: [eq[3] ?? ''] });
      continue;
    }
    const exists = /^(!?)([^\s!=()]+)$/.exec(term);
    if (exists !== null) {
      out.push({ key: exists[2] ?? '', op: exists[1] === '!' ? '!exists' : 'exists' });
      continue;
    }
    throw badRequest(`unable to parse requirement: "${term}"`);
  }
  return out;
}

export function matchesLabels(
  requirements: Requirement[],
  labels: Record<string, string> | undefined,
): boolean {
  const l = labels ?? {};
  return requirements.every((r) => {
    const has = Object.hasOwn(l, r.key);
    switch (r.op) {
      case 'exists':
        return has;
      case '!exists':
        return !has;
      case 'in':
        return has && r.values.includes(l[r.key] ?? '');
      default:
        return !has || !r.values.includes(l[r.key] ?? '');
    }
  });
}

/** A structured selector (`matchLabels` / `matchExpressions`) as requirements. */
export function requirementsOf(selector: {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}): Requirement[] {
  const out: Requirement[] = Object.entries(selector.matchLabels ?? {}).map(([key, v]) => ({
    key,
    op: 'in' as const,
    values: [v],
  }));
  for (const e of selector.matchExpressions ?? []) {
    const op = e.operator.toLowerCase();
    if (op === 'in' || op === 'notin') out.push({ key: e.key, op, values: e.values ?? [] });
    else if (op === 'exists') out.push({ key: e.key, op: 'exists' });
    else if (op === 'doesnotexist') out.push({ key: e.key, op: '!exists' });
  }
  return out;
}

const FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata.name ?? '',
  'metadata.namespace': (o) => o.metadata.namespace ?? '',
};

export function parseFieldSelector(text: string): Predicate {
  const checks: Predicate[] = [];
  for (const term of splitTerms(text)) {
    const m = /^([^\s!=]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    const read = m === null ? undefined : FIELDS[m[1] ?? ''];
    if (m === null || read === undefined) {
      throw badRequest(`field label not supported: ${m === null ? term : m[1]}`);
    }
    const want = m[3] ?? '';
    checks.push(m[2] === '!=' ? (o) => read(o) !== want : (o) => read(o) === want);
  }
  return (o) => checks.every((c) => c(o));
}

export function selectorPredicate(labelSelector: string | null, fieldSelector: string | null): Predicate {
  const labels = labelSelector ? parseLabelSelector(labelSelector) : [];
  const fields = fieldSelector ? parseFieldSelector(fieldSelector) : () => true;
  return (o) => matchesLabels(labels, o.metadata.labels) && fields(o);
}

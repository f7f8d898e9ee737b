// What a pass changed in the conditions people act on: each condition of an object, of its listeners and of its
// route parents that turned False (or came False), or turned back True, as one line naming the object, where the
// condition sits, its reason and message. So a route to a missing Service or a refused class shows in the log the
// moment it happens, and its fix too, without reading statuses.
import type { Logger } from '../platform/log-line.js';
import type { ObjectStatus } from '../translate/types.js';
import { statusKey } from './status-stamps.js';

interface Found {
  status: string;
  reason: string;
  message: string;
}

type Conditions = Map<string, Found>;

/** One condition's change: `trouble` when it went wrong (a warning), else it came right again. */
export interface ConditionChange {
  kind: string;
  text: string;
  trouble: boolean;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function addConditions(into: Conditions, where: string, conditions: unknown): void {
  for (const c of list(conditions)) {
    const type = text(field(c, 'type'));
    if (type === '') continue;
    into.set(`${where}${type}`, {
      status: text(field(c, 'status')),
      reason: text(field(c, 'reason')),
      message: text(field(c, 'message')),
    });
  }
}

/** A route parent as its status names it: namespace/name, with its section or port when it names one. */
function parentName(ref: unknown): string {
  const ns = text(field(ref, 'namespace'));
  const section = text(field(ref, 'sectionName'));
  const port = field(ref, 'port');
  const name = `${ns === '' ? '' : `${ns}/`}${text(field(ref, 'name'))}`;
  return `${name}${section === '' ? '' : `/${section}`}${typeof port === 'number' ? `:${port}` : ''}`;
}

/** Every condition of an object by where it sits: `Accepted`, `listener http: Programmed`, `parent ns/gw: …`. */
function conditionsOf(status: ObjectStatus | undefined): Conditions {
  const out: Conditions = new Map();
  if (status === undefined) return out;
  const s = status.status;
  addConditions(out, '', s.conditions);
  for (const l of list(s.listeners))
    addConditions(out, `listener ${text(field(l, 'name'))}: `, field(l, 'conditions'));
  for (const p of list(s.parents))
    addConditions(out, `parent ${parentName(field(p, 'parentRef'))}: `, field(p, 'conditions'));
  return out;
}

/**
 * One line per condition that is False now and was not False with the same reason before, or is True now and was
 * False before. Conflicted is the one condition whose True is the trouble; it reads the other way round. Pending
 * (a Gateway waiting for its proxies) is the way every Gateway starts, and says so itself: not a line.
 */
export function conditionChanges(
  previous: ReadonlyMap<string, ObjectStatus>,
  next: readonly ObjectStatus[],
): ConditionChange[] {
  const lines: ConditionChange[] = [];
  for (const status of next) {
    const key = statusKey(status);
    const before = conditionsOf(previous.get(key));
    for (const [where, now] of conditionsOf(status)) {
      const was = before.get(where);
      const bad = (c: Found | undefined) =>
        c !== undefined &&
        c.reason !== 'Pending' &&
        (where.endsWith('Conflicted') ? c.status === 'True' : c.status === 'False');
      if (bad(now) && !(bad(was) && was?.reason === now.reason && was.message === now.message)) {
        const text = `${key}: ${where}=${now.status} (${now.reason}): ${now.message}`;
        lines.push({ kind: status.kind, text, trouble: true });
      } else if (!bad(now) && bad(was) && now.status !== 'Unknown') {
        lines.push({
          kind: status.kind,
          text: `${key}: ${where}=${now.status} again (${now.reason})`,
          trouble: false,
        });
      }
    }
  }
  return lines;
}

/** Each change as one line: what went wrong at warn level, what came right at info. */
export function logConditionChanges(log: Logger, changes: readonly ConditionChange[]): void {
  for (const c of changes) (c.trouble ? log.warn : log.info)(c.text);
}

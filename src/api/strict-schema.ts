// Strict field validation, as the API server does it: a schema copy whose objects refuse fields they do not
// declare, so a misspelled field (`hostname:` for `hostnames:`) is an error naming it instead of ignored.
import { Kind, type TSchema } from '@sinclair/typebox';

type SchemaRecord = Record<string | symbol, unknown>;

function isSchema(value: unknown): value is TSchema {
  return typeof value === 'object' && value !== null && Kind in value;
}

function isRecordOf(value: unknown): value is Record<string, TSchema> {
  return typeof value === 'object' && value !== null && Object.values(value).every(isSchema);
}

function mapValues(record: Record<string, TSchema>): Record<string, TSchema> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, strictSchema(v)]));
}

/** A copy of `schema` in which every object without its own rule for extra fields refuses them. */
export function strictSchema<T extends TSchema>(schema: T): T {
  // Spread keeps TypeBox's symbol-keyed markers (Kind, OptionalKind), which structuredClone would drop.
  const out: SchemaRecord = { ...(schema as SchemaRecord) };
  if (schema[Kind] === 'Object' && isRecordOf(schema.properties)) {
    out.properties = mapValues(schema.properties);
    if (schema.additionalProperties === undefined) out.additionalProperties = false;
  }
  if (schema[Kind] === 'Record' && isRecordOf(schema.patternProperties)) {
    out.patternProperties = mapValues(schema.patternProperties);
  }
  if (isSchema(schema.items)) out.items = strictSchema(schema.items);
  if (Array.isArray(schema.anyOf)) out.anyOf = (schema.anyOf as TSchema[]).map(strictSchema);
  return out as T;
}

/** The declared field closest to a misspelled one (at most two edits away), for a "did you mean" hint. */
export function closestField(field: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = editDistance(field.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

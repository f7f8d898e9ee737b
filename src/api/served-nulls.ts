// The API server writes a Go field that has no `omitempty` and holds a nil list, map or pointer as `null`
// (an EndpointSlice with no endpoints: `"endpoints": null, "ports": null`), and Go reads `null` as the field's
// zero value. readServedNullsAsAbsent reads such a `null` the same way: as the field not being there.
import { Kind, OptionalKind, type TSchema } from '@sinclair/typebox';

function isSchema(value: unknown): value is TSchema {
  return typeof value === 'object' && value !== null && Kind in value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The schema lets the field be left out: it is optional, or has a default that fills it in. */
function absentAllowed(schema: TSchema): boolean {
  return schema[OptionalKind] === 'Optional' || 'default' in schema;
}

/**
 * Deletes, in place, every `null` field of `value` whose schema lets it be absent, at any depth, so the
 * schema's default applies as it would to a missing field. A `null` where the schema requires a value stays
 * and is reported by validation; fields the schema does not declare are left as they are.
 */
export function readServedNullsAsAbsent(schema: TSchema, value: unknown): void {
  if (Array.isArray(value)) {
    const items: unknown = schema.items;
    if (schema[Kind] === 'Array' && isSchema(items))
      for (const item of value) readServedNullsAsAbsent(items, item);
    return;
  }
  if (!isRecord(value)) return;
  if (schema[Kind] === 'Object') {
    const properties = (schema.properties ?? {}) as Record<string, TSchema>;
    for (const [name, field] of Object.entries(value)) {
      if (!Object.hasOwn(properties, name)) continue;
      const fieldSchema = properties[name]!;
      if (field === null) {
        if (absentAllowed(fieldSchema)) delete value[name];
      } else readServedNullsAsAbsent(fieldSchema, field);
    }
  } else if (schema[Kind] === 'Record') {
    const valueSchema = Object.values((schema.patternProperties ?? {}) as Record<string, TSchema>)[0];
    if (valueSchema === undefined) return;
    for (const field of Object.values(value)) readServedNullsAsAbsent(valueSchema, field);
  }
}

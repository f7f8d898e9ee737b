// Turns TypeBox validation errors into field paths and messages a person can act on.
import type { TSchema } from '@sinclair/typebox';
import { type ValueError, ValueErrorType } from '@sinclair/typebox/value';
import { HOSTNAME_PATTERN } from './common.js';
import { closestField } from './strict-schema.js';

export interface FieldError {
  path: (string | number)[];
  message: string;
}

/** `/spec/listeners/0/port` → ['spec', 'listeners', 0, 'port'] */
export function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^(0|[1-9][0-9]*)$/.test(p) ? Number(p) : p));
}

/** ['spec', 'listeners', 0, 'port'] → `spec.listeners[0].port` */
export function formatFieldPath(path: readonly (string | number)[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? p : `.${p}`;
  }
  return out;
}

function literalValues(schema: TSchema): unknown[] | undefined {
  const anyOf = (schema as { anyOf?: TSchema[] }).anyOf;
  if (!Array.isArray(anyOf)) return undefined;
  const values: unknown[] = [];
  for (const s of anyOf) {
    if (!('const' in s)) return undefined;
    values.push(s.const);
  }
  return values;
}

function describe(e: ValueError): string {
  const s = e.schema as Record<string, unknown>;
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return 'required';
    case ValueErrorType.ObjectAdditionalProperties: {
      const field = pointerToPath(e.path).at(-1);
      const known = Object.keys((s.properties as Record<string, unknown> | undefined) ?? {});
      const hint = typeof field === 'string' ? closestField(field, known) : undefined;
      return hint === undefined ? 'unknown field' : `unknown field (did you mean '${hint}'?)`;
    }
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMaximum:
      return `must be ≤ ${s.maximum}`;
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `must be ≥ ${s.minimum}`;
    case ValueErrorType.Integer:
      return 'must be an integer';
    case ValueErrorType.Number:
      return 'must be a number';
    case ValueErrorType.String:
      return 'must be a string';
    case ValueErrorType.Boolean:
      return 'must be true or false';
    case ValueErrorType.Array:
      return 'must be a list';
    case ValueErrorType.Object:
      return 'must be a mapping';
    case ValueErrorType.StringMinLength:
      return s.minLength === 1 ? 'must not be empty' : `must be at least ${s.minLength} characters`;
    case ValueErrorType.StringMaxLength:
      return `must be at most ${s.maxLength} characters`;
    case ValueErrorType.StringPattern:
      if (s.pattern === HOSTNAME_PATTERN)
        return `'${String(e.value)}' is not a valid hostname (lower case, optional leading '*.', no port)`;
      // A schema may say what its pattern means, in words a person reads better than the expression.
      return typeof s.patternMeaning === 'string'
        ? `'${String(e.value)}' ${s.patternMeaning}`
        : `'${String(e.value)}' must match ${String(s.pattern)}`;
    case ValueErrorType.ArrayMinItems:
      return `must have at least ${s.minItems} item${s.minItems === 1 ? '' : 's'}`;
    case ValueErrorType.ArrayMaxItems:
      return `must have at most ${s.maxItems} items`;
    case ValueErrorType.Literal:
      return `must be ${JSON.stringify(s.const)}`;
    case ValueErrorType.Union: {
      const values = literalValues(e.schema);
      if (values !== undefined) return `must be one of ${values.map((v) => String(v)).join(', ')}`;
      return 'has an invalid value';
    }
    default:
      return e.message;
  }
}

/** One error per field (the first), in the order TypeBox found them. */
export function toFieldErrors(errors: Iterable<ValueError>): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    if (seen.has(e.path)) continue;
    seen.add(e.path);
    // A parent-level error is redundant when a more precise one below it is already reported.
    if ([...seen].some((p) => p !== e.path && p.startsWith(`${e.path}/`))) continue;
    out.push({ path: pointerToPath(e.path), message: describe(e) });
  }
  return out;
}

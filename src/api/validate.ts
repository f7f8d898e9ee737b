// validateObject: any raw value (from a file or the API server) → a typed object with CRD defaults, or errors.
import type { TSchema } from '@sinclair/typebox';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import type { ResourceError } from './common.js';
import { type ApiKind, type ApiObject, isApiKind, KINDS, objectId } from './kinds.js';
import { formatFieldPath, toFieldErrors } from './schema-errors.js';
import { semanticErrors } from './semantic-rules.js';
import { readServedNullsAsAbsent } from './served-nulls.js';
import { strictSchema } from './strict-schema.js';

export interface ObjectSource {
  file: string;
  /** 1-based line where the object starts. */
  line: number;
  /** The 1-based line of a field, when the source can tell (YAML files can). */
  lineOf?: (path: readonly (string | number)[]) => number | undefined;
}

export interface ValidateOptions {
  /**
   * Fields the schema does not declare: `reject` (default) makes them errors naming the field, as the API server's
   * strict field validation does for files; `ignore` keeps what an API server already admitted (it prunes or
   * rejects by its own schema, which may know fields this one does not, and adds managedFields, status…).
   */
  unknownFields?: 'reject' | 'ignore';
  /**
   * `null` in a field the schema lets be absent: `reject` (default) reports it, as a slip in a file; `absent`
   * reads it as the field not being there, as the API server does (it serves empty lists and maps of some
   * kinds as `null`, e.g. an EndpointSlice's `endpoints` and `ports`).
   */
  nullFields?: 'reject' | 'absent';
}

/** For objects an API server served: it already validated them by its own schema, and writes empty as null. */
export const SERVED_BY_API_SERVER: ValidateOptions = { unknownFields: 'ignore', nullFields: 'absent' };

export type ValidationResult = { ok: true; object: ApiObject } | { ok: false; errors: ResourceError[] };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// The Kubernetes client hands out Dates for timestamps; the model keeps the API server's RFC 3339 text.
function normaliseTimestamp(raw: Record<string, unknown>): void {
  const meta = raw.metadata;
  if (isRecord(meta) && meta.creationTimestamp instanceof Date) {
    meta.creationTimestamp = meta.creationTimestamp.toISOString().replace(/\.000Z$/, 'Z');
  }
  // kubectl's client-side output (`create --dry-run=client -o yaml`) says `creationTimestamp: null`: not set yet.
  if (isRecord(meta) && meta.creationTimestamp === null) delete meta.creationTimestamp;
}

interface Checker {
  schema: TSchema;
  check: TypeCheck<TSchema>;
}

const checkers = new Map<string, Checker>();

function checker(kind: ApiKind, strict: boolean): Checker {
  const key = `${kind}/${strict ? 'strict' : 'lenient'}`;
  let c = checkers.get(key);
  if (c === undefined) {
    const schema = strict ? strictSchema(KINDS[kind].schema) : KINDS[kind].schema;
    c = { schema, check: TypeCompiler.Compile(schema) };
    checkers.set(key, c);
  }
  return c;
}

/** Never throws: whatever goes wrong becomes an error naming the object's source. */
export function validateObject(
  raw: unknown,
  source?: ObjectSource,
  options: ValidateOptions = {},
): ValidationResult {
  try {
    return validate(raw, source, options.unknownFields !== 'ignore', options.nullFields === 'absent');
  } catch (error) {
    const e: ResourceError = { message: `cannot validate: ${(error as Error).message}` };
    if (source !== undefined) {
      e.file = source.file;
      e.line = source.line;
    }
    return { ok: false, errors: [e] };
  }
}

function validate(
  raw: unknown,
  source: ObjectSource | undefined,
  strict: boolean,
  nullAsAbsent: boolean,
): ValidationResult {
  const at = (
    field: readonly (string | number)[] | undefined,
    message: string,
    object?: string,
  ): ResourceError => {
    const e: ResourceError = { message };
    if (source !== undefined) {
      e.file = source.file;
      e.line = (field !== undefined ? source.lineOf?.(field) : undefined) ?? source.line;
    }
    if (object !== undefined) e.object = object;
    if (field !== undefined && field.length > 0) e.field = formatFieldPath(field);
    return e;
  };
  if (!isRecord(raw)) return { ok: false, errors: [at(undefined, 'an object must be a mapping')] };
  const meta = isRecord(raw.metadata) ? raw.metadata : undefined;
  const name = typeof meta?.name === 'string' ? meta.name : undefined;
  const kind = raw.kind;
  if (typeof kind !== 'string' || kind === '') return { ok: false, errors: [at(['kind'], 'required')] };
  if (!isApiKind(kind)) {
    return { ok: false, errors: [at(['kind'], `unknown kind '${kind}'`, objectId(kind, name))] };
  }
  const info = KINDS[kind];
  const namespace = info.namespaced
    ? typeof meta?.namespace === 'string' && meta.namespace !== ''
      ? meta.namespace
      : 'default'
    : undefined;
  const id = objectId(kind, name, namespace);
  if (typeof raw.apiVersion !== 'string' || !info.apiVersions.includes(raw.apiVersion)) {
    return {
      ok: false,
      errors: [at(['apiVersion'], `must be one of ${info.apiVersions.join(', ')} for kind ${kind}`, id)],
    };
  }
  const value = structuredClone(raw);
  normaliseTimestamp(value);
  if (info.namespaced && isRecord(value.metadata)) value.metadata.namespace = namespace;
  if (!info.namespaced && isRecord(value.metadata)) delete value.metadata.namespace;
  const { schema, check } = checker(kind, strict);
  if (nullAsAbsent) readServedNullsAsAbsent(schema, value);
  const defaulted: unknown = Value.Default(schema, value);
  // The compiled check is the fast path; the (slower) error walk runs only for invalid objects.
  if (!check.Check(defaulted)) {
    const schemaErrors = toFieldErrors(Value.Errors(schema, defaulted));
    return { ok: false, errors: schemaErrors.map((e) => at(e.path, e.message, id)) };
  }
  const object = defaulted as ApiObject;
  const ruleErrors = semanticErrors(object);
  if (ruleErrors.length > 0) return { ok: false, errors: ruleErrors.map((e) => at(e.path, e.message, id)) };
  return { ok: true, object };
}

// Schemas shared by every kind: object metadata, references, conditions, and the error shape of the API layer.
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { escapeLogLine } from '../platform/log-line.js';

/** RFC 1123 hostname, optionally with a leading `*.` wildcard label, as the Gateway API accepts it. */
export const HOSTNAME_PATTERN = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const ObjectMetaSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 253 }),
  namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
  uid: Type.Optional(Type.String()),
  resourceVersion: Type.Optional(Type.String()),
  // Files carry no generation; 1 is what the API server assigns on create.
  generation: Type.Integer({ minimum: 0, default: 1 }),
  creationTimestamp: Type.Optional(Type.String()),
  labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
  // Kubernetes metadata Portico does not read: declared so that strict validation admits `kubectl get -o yaml`.
  generateName: Type.Optional(Type.Unknown()),
  selfLink: Type.Optional(Type.Unknown()),
  deletionTimestamp: Type.Optional(Type.Unknown()),
  deletionGracePeriodSeconds: Type.Optional(Type.Unknown()),
  ownerReferences: Type.Optional(Type.Unknown()),
  finalizers: Type.Optional(Type.Unknown()),
  managedFields: Type.Optional(Type.Unknown()),
});

/** A field the upstream schema declares and Portico does not implement: admitted (as the API server would), unread. */
/** A Gateway API LocalObjectReference: an object in the referrer's namespace, by group, kind and name. */
export const LocalObjectReferenceSchema = Type.Object({
  group: Type.String({ maxLength: 253 }),
  kind: Type.String({ minLength: 1, maxLength: 63 }),
  name: Type.String({ minLength: 1, maxLength: 253 }),
});

/** A Gateway API ObjectReference: a LocalObjectReference that may name another namespace. */
export const ObjectReferenceSchema = Type.Object({
  ...LocalObjectReferenceSchema.properties,
  namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
});

export const Unimplemented = () => Type.Optional(Type.Unknown());
export type ObjectMeta = Static<typeof ObjectMetaSchema>;

export const LabelSelectorSchema = Type.Object({
  matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
  matchExpressions: Type.Optional(
    Type.Array(
      Type.Object({
        key: Type.String({ minLength: 1 }),
        operator: Type.Union([
          Type.Literal('In'),
          Type.Literal('NotIn'),
          Type.Literal('Exists'),
          Type.Literal('DoesNotExist'),
        ]),
        values: Type.Optional(Type.Array(Type.String())),
      }),
    ),
  ),
});
export type LabelSelector = Static<typeof LabelSelectorSchema>;

export const ConditionSchema = Type.Object({
  type: Type.String(),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.String(),
  message: Type.String(),
  observedGeneration: Type.Optional(Type.Integer()),
  lastTransitionTime: Type.Optional(Type.String()),
});
export type Condition = Static<typeof ConditionSchema>;

/** A string enum as TypeBox literals, so errors can list the allowed values. */
export function Enum<const T extends readonly string[]>(
  values: T,
  options: { default?: T[number]; description?: string } = {},
) {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  ) as unknown as TSchema & { static: T[number] };
}

/** Every problem the API layer reports: where (file, line), which object, which field, and what. */
export interface ResourceError {
  file?: string;
  line?: number;
  /** `Kind namespace/name` or `Kind name` */
  object?: string;
  /** Dotted path with indexes: `spec.listeners[0].port` */
  field?: string;
  message: string;
}

/** `gw.yaml:12: Gateway default/eg: spec.listeners[0].port: must be ≤ 65535` */
export function formatResourceError(e: ResourceError): string {
  const parts: string[] = [];
  if (e.file !== undefined) parts.push(e.line !== undefined ? `${e.file}:${e.line}` : e.file);
  if (e.object !== undefined) parts.push(e.object);
  if (e.field !== undefined && e.field !== '') parts.push(e.field);
  parts.push(e.message);
  // One line whatever the file name or a quoted value holds: these lines go to logs.
  return escapeLogLine(parts.join(': '));
}

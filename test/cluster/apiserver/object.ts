// The shape every stored Kubernetes object has: free-form JSON with typed metadata.
export type JsonObject = Record<string, unknown>;

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: JsonObject[];
}

export interface KubeObject extends JsonObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Reads a nested field (`spec.template.spec`) as an object, or undefined. */
export function objectAt(value: unknown, ...path: string[]): JsonObject | undefined {
  let current: unknown = value;
  for (const key of path) {
    if (!isJsonObject(current)) return undefined;
    current = current[key];
  }
  return isJsonObject(current) ? current : undefined;
}

export function arrayAt(value: unknown, ...path: string[]): unknown[] {
  const parent = objectAt(value, ...path.slice(0, -1));
  const last = path[path.length - 1];
  const found = parent !== undefined && last !== undefined ? parent[last] : undefined;
  return Array.isArray(found) ? found : [];
}

export function stringAt(value: unknown, ...path: string[]): string | undefined {
  const parent = objectAt(value, ...path.slice(0, -1));
  const last = path[path.length - 1];
  const found = parent !== undefined && last !== undefined ? parent[last] : undefined;
  return typeof found === 'string' ? found : undefined;
}

export function numberAt(value: unknown, ...path: string[]): number | undefined {
  const parent = objectAt(value, ...path.slice(0, -1));
  const last = path[path.length - 1];
  const found = parent !== undefined && last !== undefined ? parent[last] : undefined;
  return typeof found === 'number' ? found : undefined;
}

/** Turns any parsed JSON into a KubeObject, or explains why it is not one. */
export function asKubeObject(value: unknown): KubeObject | string {
  if (!isJsonObject(value)) return 'the body is not a JSON object';
  const metadata = value.metadata ?? {};
  if (!isJsonObject(metadata)) return 'metadata: must be an object';
  return { ...value, metadata: metadata as ObjectMeta };
}

// Kubernetes `Status` bodies: every error the API server returns is one of these.
import type { JsonObject } from './object.js';

export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: JsonObject | undefined;

  constructor(code: number, reason: string, message: string, details?: JsonObject) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
}

export function statusBody(error: ApiError): JsonObject {
  const body: JsonObject = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: error.message,
    reason: error.reason,
    code: error.code,
  };
  if (error.details !== undefined) body.details = error.details;
  return body;
}

export interface Target {
  group: string;
  resource: string;
  kind: string;
  name?: string;
}

function qualified(t: Target): string {
  return t.group === '' ? t.resource : `${t.resource}.${t.group}`;
}

function details(t: Target): JsonObject {
  const d: JsonObject = { group: t.group, kind: t.resource };
  if (t.name !== undefined) d.name = t.name;
  return d;
}

export function notFound(t: Target): ApiError {
  return new ApiError(404, 'NotFound', `${qualified(t)} "${t.name ?? ''}" not found`, details(t));
}

export function alreadyExists(t: Target): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualified(t)} "${t.name ?? ''}" already exists`, details(t));
}

export function conflict(t: Target, why: string): ApiError {
  return new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(t)} "${t.name ?? ''}": ${why}`,
    details(t),
  );
}

export function invalid(t: Target, causes: string[]): ApiError {
  return new ApiError(422, 'Invalid', `${t.kind} "${t.name ?? ''}" is invalid: ${causes.join(', ')}`, {
    ...details(t),
    kind: t.kind,
    causes: causes.map((message) => ({ message })),
  });
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

export function methodNotAllowed(message: string): ApiError {
  return new ApiError(405, 'MethodNotAllowed', message);
}

export function unsupportedMediaType(contentType: string): ApiError {
  return new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got ${contentType})`,
  );
}

export function unauthorized(): ApiError {
  return new ApiError(401, 'Unauthorized', 'Unauthorized');
}

export function gone(message: string): ApiError {
  return new ApiError(410, 'Expired', message);
}

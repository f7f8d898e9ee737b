// JSON merge patch (RFC 7386) and JSON patch (RFC 6902).
import { clone, isJsonObject, type JsonObject } from './object.js';
import { ApiError, badRequest } from './status.js';

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return clone(patch);
  const out: JsonObject = isJsonObject(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw badRequest(`JSON patch: invalid path "${path}"`);
  return path.slice(1).split('/').map(unescapeToken);
}

function parentOf(doc: unknown, tokens: string[], path: string): unknown {
  let current = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(current)) current = current[Number(t)];
    else if (isJsonObject(current)) current = current[t];
    else current = undefined;
    if (current === undefined) throw invalidPatch(`JSON patch: path "${path}" does not exist`);
  }
  return current;
}

function invalidPatch(message: string): ApiError {
  return new ApiError(422, 'Invalid', message);
}

function read(doc: unknown, path: string): unknown {
  const tokens = pointer(path);
  let current = doc;
  for (const t of tokens) {
    if (Array.isArray(current)) current = current[Number(t)];
    else if (isJsonObject(current)) current = current[t];
    else current = undefined;
    if (current === undefined) throw invalidPatch(`JSON patch: path "${path}" does not exist`);
  }
  return current;
}

function removeAt(doc: unknown, path: string): unknown {
  const tokens = pointer(path);
  const last = tokens[tokens.length - 1] ?? '';
  const parent = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = Number(last);
    if (!(i >= 0 && i < parent.length)) throw invalidPatch(`JSON patch: path "${path}" does not exist`);
    return parent.splice(i, 1)[0];
  }
  if (isJsonObject(parent) && Object.hasOwn(parent, last)) {
    const v = parent[last];
    delete parent[last];
    return v;
  }
  throw invalidPatch(`JSON patch: path "${path}" does not exist`);
}

function addAt(doc: unknown, path: string, value: unknown, replace: boolean): unknown {
  const tokens = pointer(path);
  if (tokens.length === 0) return clone(value);
  const last = tokens[tokens.length - 1] ?? '';
  const parent = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = last === '-' ? parent.length : Number(last);
    if (!(i >= 0 && i <= parent.length) || (replace && i === parent.length)) {
      throw invalidPatch(`JSON patch: index out of range in "${path}"`);
    }
    parent.splice(i, replace ? 1 : 0, clone(value));
  } else if (isJsonObject(parent)) {
    if (replace && !Object.hasOwn(parent, last))
      throw invalidPatch(`JSON patch: path "${path}" does not exist`);
    parent[last] = clone(value);
  } else {
    throw invalidPatch(`JSON patch: path "${path}" does not exist`);
  }
  return doc;
}

export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw badRequest('JSON patch: the body must be an array of operations');
  let doc = clone(target);
  for (const op of operations) {
    if (!isJsonObject(op) || typeof op.op !== 'string' || typeof op.path !== 'string') {
      throw badRequest('JSON patch: every operation needs "op" and "path"');
    }
    const path = op.path;
    switch (op.op) {
      case 'add':
        doc = addAt(doc, path, op.value, false);
        break;
      case 'replace':
        doc = addAt(doc, path, op.value, true);
        break;
      case 'remove':
        removeAt(doc, path);
        break;
      case 'move':
      case 'copy': {
        const from = String(op.from ?? '');
        const value = op.op === 'move' ? removeAt(doc, from) : clone(read(doc, from));
        doc = addAt(doc, path, value, false);
        break;
      }
      case 'test':
        if (JSON.stringify(read(doc, path)) !== JSON.stringify(op.value)) {
          throw invalidPatch(`JSON patch: test operation failed at "${path}"`);
        }
        break;
      default:
        throw badRequest(`JSON patch: unknown operation "${op.op}"`);
    }
  }
  return doc;
}

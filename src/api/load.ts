// The YAML loader: multi-document files and directories → validated objects, errors with file and line.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type Document, isNode, LineCounter } from 'yaml';
import { NotRegularFileError, notRegularFile, readRegularFile } from '../platform/read-regular-file.js';
import type { ResourceError } from './common.js';
import { type ApiObject, describeObject } from './kinds.js';
import { validateObject } from './validate.js';
import { parseYamlDocuments } from './yaml-documents.js';

export interface LoadedObject {
  object: ApiObject;
  source?: { file: string; line: number };
}

export interface LoadResult {
  objects: LoadedObject[];
  errors: ResourceError[];
}

const EXTENSIONS = ['.yaml', '.yml', '.json'];

function lineLocator(doc: Document, lines: LineCounter, base: readonly (string | number)[]) {
  return (path: readonly (string | number)[]): number | undefined => {
    // A missing field has no line of its own: report the nearest enclosing one that exists.
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn([...base, ...path.slice(0, n)], true);
      if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
    }
    return undefined;
  };
}

/** Parses one file's text; every document (and every item of a `kind: List`) is validated on its own. Never throws. */
export function parseYamlFile(file: string, text: string): LoadResult {
  const result: LoadResult = { objects: [], errors: [] };
  const lines = new LineCounter();
  for (const parsed of parseYamlDocuments(text, lines)) {
    if (!parsed.ok) {
      result.errors.push({ file, line: parsed.line, message: parsed.message });
      continue;
    }
    const { doc, value: raw } = parsed;
    if (raw === null || raw === undefined) continue;
    const items: { raw: unknown; base: (string | number)[] }[] =
      typeof raw === 'object' && !Array.isArray(raw) && (raw as { kind?: unknown }).kind === 'List'
        ? (Array.isArray((raw as { items?: unknown }).items) ? (raw as { items: unknown[] }).items : []).map(
            (item, i) => ({ raw: item, base: ['items', i] }),
          )
        : [{ raw, base: [] }];
    for (const item of items) {
      const locate = lineLocator(doc, lines, item.base);
      const line = locate([]) ?? parsed.line;
      const validated = validateObject(item.raw, { file, line, lineOf: locate });
      if (validated.ok) result.objects.push({ object: validated.object, source: { file, line } });
      else result.errors.push(...validated.errors);
    }
  }
  return withoutDuplicates(result);
}

async function collectFiles(
  path: string,
  out: string[],
  errors: ResourceError[],
  explicit: boolean,
): Promise<void> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    errors.push({
      file: path,
      message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    });
    return;
  }
  if (info.isDirectory()) {
    let entries: string[];
    try {
      entries = (await readdir(path)).sort();
    } catch (error) {
      errors.push({
        file: path,
        message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      });
      return;
    }
    for (const entry of entries) {
      if (entry.startsWith('.')) continue;
      await collectFiles(join(path, entry), out, errors, false);
    }
  } else if (explicit || EXTENSIONS.some((ext) => path.endsWith(ext))) {
    // A FIFO or device is reported, never opened: a read could block for ever.
    if (info.isFile()) out.push(path);
    else errors.push({ file: path, message: notRegularFile(path, info).what });
  }
}

/** Loads files and directories (recursively, `.yaml`/`.yml`/`.json`, in name order). Never throws. */
export async function loadPaths(paths: string[]): Promise<LoadResult> {
  const result: LoadResult = { objects: [], errors: [] };
  const files: string[] = [];
  for (const p of paths) await collectFiles(p, files, result.errors, true);
  for (const file of files) {
    let text: string;
    try {
      text = await readRegularFile(file);
    } catch (error) {
      const message =
        error instanceof NotRegularFileError
          ? error.what
          : `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
      result.errors.push({ file, message });
      continue;
    }
    const parsed = parseYamlFile(file, text);
    result.objects.push(...parsed.objects);
    result.errors.push(...parsed.errors);
  }
  return withoutDuplicates(result);
}

/** The API server keeps one object per kind/namespace/name; so do files: the first one wins. */
export function withoutDuplicates(result: LoadResult): LoadResult {
  const seen = new Map<string, LoadedObject>();
  const objects: LoadedObject[] = [];
  const errors = [...result.errors];
  for (const o of result.objects) {
    const id = describeObject(o.object);
    const first = seen.get(id);
    if (first === undefined) {
      seen.set(id, o);
      objects.push(o);
      continue;
    }
    const e: ResourceError = {
      object: id,
      message: `duplicate; the one at ${first.source?.file}:${first.source?.line} is used`,
    };
    if (o.source !== undefined) {
      e.file = o.source.file;
      e.line = o.source.line;
    }
    errors.push(e);
  }
  return { objects, errors };
}

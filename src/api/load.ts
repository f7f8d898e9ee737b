// The YAML loader: multi-document files and directories → validated objects, errors with file and line.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type Document, isNode, LineCounter, parseAllDocuments } from 'yaml';
import type { ResourceError } from './common.js';
import { type ApiObject, describeObject } from './kinds.js';
import { validateObject } from './validate.js';

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

/** Parses one file's text; every document (and every item of a `kind: List`) is validated on its own. */
export function parseYamlFile(file: string, text: string): LoadResult {
  const result: LoadResult = { objects: [], errors: [] };
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (!Array.isArray(docs)) {
    // An empty stream gives back an EmptyStream marker, not documents.
    return result;
  }
  for (const doc of docs) {
    const firstError = doc.errors[0];
    if (firstError !== undefined) {
      const line = firstError.linePos?.[0].line ?? lines.linePos(firstError.pos[0]).line;
      result.errors.push({ file, line, message: `YAML: ${firstError.message.split('\n')[0]}` });
      continue;
    }
    const raw: unknown = doc.toJS({ maxAliasCount: 100 });
    if (raw === null || raw === undefined) continue;
    const contentsStart = doc.contents?.range[0] ?? 0;
    const items: { raw: unknown; base: (string | number)[] }[] =
      typeof raw === 'object' && !Array.isArray(raw) && (raw as { kind?: unknown }).kind === 'List'
        ? (Array.isArray((raw as { items?: unknown }).items) ? (raw as { items: unknown[] }).items : []).map(
            (item, i) => ({ raw: item, base: ['items', i] }),
          )
        : [{ raw, base: [] }];
    for (const item of items) {
      const locate = lineLocator(doc, lines, item.base);
      const line = locate([]) ?? lines.linePos(contentsStart).line;
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
    const entries = (await readdir(path)).sort();
    for (const entry of entries) {
      if (entry.startsWith('.')) continue;
      await collectFiles(join(path, entry), out, errors, false);
    }
  } else if (explicit || EXTENSIONS.some((ext) => path.endsWith(ext))) {
    out.push(path);
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
      text = await readFile(file, 'utf8');
    } catch (error) {
      result.errors.push({
        file,
        message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      });
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

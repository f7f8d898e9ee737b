// Which resource file defines which objects: the files in path order (the first file defining an id serves
// it), and for each id the files defining it, so duplicates are found without scanning every file.
import type { ResourceError } from '../../api/common.js';
import type { ApiObject } from '../../api/kinds.js';
import { partitionPoint } from '../../platform/sorted-search.js';

export interface FileEntry {
  /** Object id → the object as served (metadata filled in). */
  objects: Map<string, ApiObject>;
}

export interface FileIndex {
  get(path: string): FileEntry | undefined;
  /** How many files are indexed. */
  readonly size: number;
  /** Every file's entry, in path order. */
  entries(): Generator<[string, FileEntry]>;
  /** Indexes `path` with `entry`, or drops it (undefined). */
  set(path: string, entry: FileEntry | undefined): void;
  /** How many files define `id`. */
  definitions(id: string): number;
  /** One error for each object of `path` that another file defines too. */
  duplicatesOf(path: string, entry: FileEntry): ResourceError[];
  /** One error for each definition that is not served, from the current files. */
  duplicates(): ResourceError[];
}

function alsoDefined(file: string, id: string, first: string): ResourceError {
  return { file, object: id, message: `also defined in ${first}; the definition there is served` };
}

export function fileIndex(): FileIndex {
  const files = new Map<string, FileEntry>();
  /** File paths, kept sorted as files come and go. */
  const paths: string[] = [];
  const definedIn = new Map<string, Set<string>>();

  const pathIndex = (path: string): number => partitionPoint(paths.length, (i) => paths[i]! < path);

  return {
    get: (path) => files.get(path),
    get size() {
      return files.size;
    },
    *entries() {
      for (const path of paths) yield [path, files.get(path)!];
    },
    set(path, entry) {
      const before = files.get(path);
      for (const id of before?.objects.keys() ?? []) {
        const owners = definedIn.get(id);
        owners?.delete(path);
        if (owners?.size === 0) definedIn.delete(id);
      }
      const at = pathIndex(path);
      if (entry === undefined) {
        if (before !== undefined) paths.splice(at, 1);
        files.delete(path);
        return;
      }
      if (before === undefined) paths.splice(at, 0, path);
      files.set(path, entry);
      for (const id of entry.objects.keys()) {
        const owners = definedIn.get(id);
        if (owners === undefined) definedIn.set(id, new Set([path]));
        else owners.add(path);
      }
    },
    definitions: (id) => definedIn.get(id)?.size ?? 0,
    duplicatesOf(path, entry) {
      const errors: ResourceError[] = [];
      for (const id of entry.objects.keys()) {
        for (const otherPath of definedIn.get(id) ?? []) {
          if (otherPath === path) continue;
          const [first, second] = [path, otherPath].sort();
          errors.push(alsoDefined(second!, id, first!));
        }
      }
      return errors;
    },
    duplicates() {
      const errors: ResourceError[] = [];
      for (const [id, owners] of definedIn) {
        if (owners.size < 2) continue;
        const [first, ...others] = [...owners].sort();
        for (const file of others) errors.push(alsoDefined(file, id, first!));
      }
      return errors;
    },
  };
}

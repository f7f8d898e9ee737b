import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { PorticoError } from '../../../src/platform/errors.js';
import {
  type FileBatch,
  type FileWatchOptions,
  watchFiles,
} from '../../../src/provider/standalone/file-watch.js';

const WAIT_LIMIT_MS = 10_000;

/** Starts a watcher and mirrors its batches into `view`; `until` waits for the view to satisfy a check. */
async function watched(
  t: { after: (fn: () => Promise<void>) => void },
  paths: string[],
  extra: Partial<FileWatchOptions> = {},
) {
  const batches: FileBatch[] = [];
  const errors: PorticoError[] = [];
  const view = new Map<string, string>();
  let wake: (() => void) | undefined;
  const watcher = await watchFiles({
    paths,
    pollIntervalMs: 0,
    onBatch: (batch) => {
      batches.push(batch);
      for (const [path, content] of batch.changed) view.set(path, content);
      for (const path of batch.removed) view.delete(path);
      wake?.();
    },
    onError: (e) => errors.push(e),
    ...extra,
  });
  t.after(() => watcher.close());
  async function until(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + WAIT_LIMIT_MS;
    while (!check()) {
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; view: ${[...view.keys()]}`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
  }
  return { batches, errors, view, until, watcher };
}

async function tempDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portico-watch-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('the first batch is a full read of resource files, recursively, skipping other and hidden files', async (t) => {
  const dir = await tempDir(t);
  await mkdir(join(dir, 'nested/deeper'), { recursive: true });
  await writeFile(join(dir, 'a.yaml'), 'a: 1\n');
  await writeFile(join(dir, 'nested/b.yml'), 'b: 1\n');
  await writeFile(join(dir, 'nested/deeper/c.json'), '{}');
  await writeFile(join(dir, 'notes.txt'), 'not a resource');
  await writeFile(join(dir, '.hidden.yaml'), 'x: 1\n');
  const single = join(await tempDir(t), 'explicit.conf');
  await writeFile(single, 'kind: Gateway\n');
  const { batches } = await watched(t, [dir, single]);
  assert.equal(batches.length, 1);
  assert.deepEqual(
    [...(batches[0]?.changed.keys() ?? [])].sort(),
    [join(dir, 'a.yaml'), join(dir, 'nested/b.yml'), join(dir, 'nested/deeper/c.json'), single].sort(),
  );
  assert.equal(batches[0]?.changed.get(single), 'kind: Gateway\n');
  assert.deepEqual(batches[0]?.removed, []);
});

test('created, modified and deleted files are reported', async (t) => {
  const dir = await tempDir(t);
  const a = join(dir, 'a.yaml');
  await writeFile(a, 'v: 1\n');
  const { view, until, batches } = await watched(t, [dir]);
  const b = join(dir, 'b.yaml');
  await writeFile(b, 'v: new\n');
  await until(() => view.get(b) === 'v: new\n', 'the new file');
  await writeFile(a, 'v: 2\n');
  await until(() => view.get(a) === 'v: 2\n', 'the modification');
  await rm(b);
  await until(() => !view.has(b), 'the deletion');
  assert.ok(batches.some((x) => x.removed.includes(b)));
});

test("an editor's rename-and-replace is one change, never a removal", async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'gw.yaml');
  await writeFile(file, 'v: 1\n');
  const single = join(await tempDir(t), 'route.yaml');
  await writeFile(single, 'r: 1\n');
  const { view, until, batches } = await watched(t, [dir, single]);
  for (const [target, content] of [
    [file, 'v: 2\n'],
    [single, 'r: 2\n'],
  ] as const) {
    const temp = join(dir, '.gw.yaml.swp');
    await writeFile(temp, content);
    await rename(temp, target);
    await until(() => view.get(target) === content, `the replaced ${target}`);
  }
  // Vim's way: move the original aside, write a new file under the name.
  await rename(file, `${file}~`);
  await writeFile(file, 'v: 3\n');
  await until(() => view.get(file) === 'v: 3\n', 'the rewritten file');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.ok(
    !batches.some((x) => x.removed.includes(file) || x.removed.includes(single)),
    'reported a removal',
  );
  assert.equal(view.get(file), 'v: 3\n');
});

test('files in a new subdirectory are picked up, and a removed subdirectory removes its files', async (t) => {
  const dir = await tempDir(t);
  const { view, until } = await watched(t, [dir]);
  const sub = join(dir, 'team-a/routes');
  await mkdir(sub, { recursive: true });
  const route = join(sub, 'route.yaml');
  await writeFile(route, 'kind: HTTPRoute\n');
  await until(() => view.get(route) === 'kind: HTTPRoute\n', 'the file in the new subdirectory');
  await writeFile(route, 'kind: HTTPRoute # edited\n');
  await until(() => view.get(route) === 'kind: HTTPRoute # edited\n', 'the edit in the subdirectory');
  await rm(join(dir, 'team-a'), { recursive: true });
  await until(() => !view.has(route), 'the removal of the subdirectory');
});

test('a burst of writes is coalesced and a touch without a change emits nothing', async (t) => {
  const dir = await tempDir(t);
  const { view, until, batches } = await watched(t, [dir], { debounceMs: 50 });
  await Promise.all(Array.from({ length: 20 }, (_, i) => writeFile(join(dir, `f${i}.yaml`), `i: ${i}\n`)));
  await until(() => view.size === 20, 'all twenty files');
  assert.ok(batches.length < 21, `expected fewer batches than files, got ${batches.length}`);
  const count = batches.length;
  await writeFile(join(dir, 'f0.yaml'), 'i: 0\n');
  await writeFile(join(dir, 'f1.yaml'), 'i: changed\n');
  await until(() => view.get(join(dir, 'f1.yaml')) === 'i: changed\n', 'the change');
  const later = batches.slice(count);
  assert.ok(!later.some((x) => x.changed.has(join(dir, 'f0.yaml'))), 'an unchanged rewrite was reported');
});

test('the poll finds a root directory that was deleted and re-created', async (t) => {
  const parent = await tempDir(t);
  const dir = join(parent, 'resources');
  await mkdir(dir);
  await writeFile(join(dir, 'a.yaml'), 'a: 1\n');
  const { view, until } = await watched(t, [dir], { pollIntervalMs: 100 });
  await rm(dir, { recursive: true });
  await until(() => view.size === 0, 'the removal');
  await mkdir(dir);
  await writeFile(join(dir, 'b.yaml'), 'b: 1\n');
  await until(() => view.get(join(dir, 'b.yaml')) === 'b: 1\n', 'the file in the re-created root');
  await writeFile(join(dir, 'c.yaml'), 'c: 1\n');
  await until(() => view.has(join(dir, 'c.yaml')), 'a later file in the re-created root');
});

test('a missing path is an error naming it', async (t) => {
  const dir = await tempDir(t);
  await assert.rejects(
    watchFiles({ paths: [join(dir, 'nope')], onBatch: () => {}, onError: () => {} }),
    /nope: no such file or directory/,
  );
});

test('a file caught empty in the middle of an in-place write is not reported empty; one left empty is', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'a.yaml');
  await writeFile(file, 'a: 1\n');
  const w = await watched(t, [dir], { removalDelayMs: 300 });
  // Truncate, let the watcher read the empty file, then write: as an editor writing in place under load.
  await writeFile(file, '');
  await new Promise((resolve) => setTimeout(resolve, 60));
  await writeFile(file, 'a: 2\n');
  await w.until(() => w.view.get(file) === 'a: 2\n', 'the new content');
  assert.ok(
    w.batches.every((b) => b.changed.get(file) !== ''),
    'no batch carried the half-written (empty) file',
  );
  await writeFile(file, '');
  await w.until(() => w.view.get(file) === '', 'the emptied file, once settled');
});

test('a FIFO among the resource files is reported once and never read; a FIFO root is refused', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'a.yaml'), 'a: 1\n');
  // Nothing ever writes to it: reading it would block for ever.
  execFileSync('mkfifo', [join(dir, 'pipe.yaml')]);
  const w = await watched(t, [dir], { pollIntervalMs: 50 });
  assert.deepEqual([...w.view.keys()], [join(dir, 'a.yaml')]);
  await writeFile(join(dir, 'b.yaml'), 'b: 1\n');
  await w.until(() => w.view.has(join(dir, 'b.yaml')), 'a later file');
  assert.deepEqual(
    w.errors.map((e) => e.message),
    [`${join(dir, 'pipe.yaml')}: a FIFO, not a regular file: not read`],
  );
  await assert.rejects(
    watchFiles({ paths: [join(dir, 'pipe.yaml')], onBatch: () => {}, onError: () => {} }),
    /pipe\.yaml: a FIFO, not a regular file: not read/,
  );
});

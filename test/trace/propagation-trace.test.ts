import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isPorticoError } from '../../src/platform/errors.js';
import { watchFiles } from '../../src/provider/standalone/file-watch.js';
import { appendStageTrace } from '../../src/trace/propagation-trace.js';

async function tempDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portico-trace-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('appendStageTrace appends one line per stage: epoch ms, pid, cpu µs, stage, detail; several hooks share a file', async (t) => {
  const file = join(await tempDir(t), 'events');
  const first = appendStageTrace(file);
  const second = appendStageTrace(file);
  first('fs-event', 'a.yaml');
  second('proxy-swapped', '7');
  first('gathered');
  const lines = (await readFile(file, 'utf8')).split('\n').slice(0, -1);
  assert.equal(lines.length, 3);
  const [t0, pid, cpu, stage, detail] = lines[0]!.split(' ');
  assert.ok(Math.abs(Number(t0) - Date.now()) < 60_000, t0);
  assert.equal(pid, String(process.pid));
  assert.ok(Number.isInteger(Number(cpu)), cpu);
  assert.deepEqual([stage, detail], ['fs-event', 'a.yaml']);
  assert.deepEqual(
    lines.map((l) => l.split(' ').slice(3).join(' ')),
    ['fs-event a.yaml', 'proxy-swapped 7', 'gathered '],
  );
});

test('a trace file that cannot be opened is an E_IO error naming the option', async (t) => {
  const missing = join(await tempDir(t), 'no-such-dir', 'events');
  assert.throws(
    () => appendStageTrace(missing, '--trace-events'),
    (error) =>
      isPorticoError(error) &&
      error.code === 'E_IO' &&
      error.message.startsWith(`--trace-events: cannot open ${missing}`),
  );
});

test('the file watcher tells its trace hook when an event arrives, its batch is gathered and its files are read', async (t) => {
  const dir = await tempDir(t);
  const stages: string[] = [];
  let batches = 0;
  const watcher = await watchFiles({
    paths: [dir],
    onBatch: () => {
      batches++;
    },
    onError: (error) => console.error(error.message),
    pollIntervalMs: 0,
    trace: (stage) => stages.push(stage),
  });
  t.after(() => watcher.close());
  assert.deepEqual(stages, ['read'], 'the initial scan');
  await writeFile(join(dir, 'route.yaml'), 'kind: HTTPRoute\n');
  for (let i = 0; i < 500 && batches < 2; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(batches, 2);
  assert.deepEqual(stages.slice(1, 4), ['fs-event', 'gathered', 'read']);
});

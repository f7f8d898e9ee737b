// How long after a file write the standalone file watcher delivers the batch, next to its floor: the raw
// `fs.watch` event for the same write. Run: node --import tsx bench/file-watch-latency.ts [edits]
import { watch } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchFiles } from '../src/provider/standalone/file-watch.js';

const edits = Number(process.argv[2] ?? 200);
const dir = await mkdtemp(join(tmpdir(), 'portico-bench-watch-'));
for (let i = 0; i < 50; i++) await writeFile(join(dir, `other-${i}.yaml`), `i: ${i}\n`);
const target = join(dir, 'route.yaml');
await writeFile(target, 'v: 0\n');

let onBatch: (() => void) | undefined;
let onRaw: (() => void) | undefined;
const watcher = await watchFiles({
  paths: [dir],
  onBatch: (batch) => {
    if (batch.changed.has(target)) onBatch?.();
  },
  onError: (error) => console.error(error.message),
});
const raw = watch(dir, (_event, name) => {
  if (name === 'route.yaml') onRaw?.();
});

const batchMs: number[] = [];
const rawMs: number[] = [];
for (let i = 1; i <= edits; i++) {
  const start = performance.now();
  let rawSeen = false;
  const rawDone = new Promise<void>((resolve) => {
    onRaw = () => {
      if (rawSeen) return;
      rawSeen = true;
      rawMs.push(performance.now() - start);
      resolve();
    };
  });
  const batchDone = new Promise<void>((resolve) => {
    onBatch = () => {
      batchMs.push(performance.now() - start);
      resolve();
    };
  });
  await writeFile(target, `v: ${i}\n`);
  await Promise.all([rawDone, batchDone]);
}
raw.close();
await watcher.close();
await rm(dir, { recursive: true, force: true });

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
const row = (name: string, values: number[]) =>
  `${name.padEnd(34)} p50 ${quantile(values, 0.5).toFixed(2).padStart(6)} ms   p99 ${quantile(values, 0.99).toFixed(2).padStart(6)} ms`;
console.log(`${edits} edits of one file among 51 in a watched directory`);
console.log(row('raw fs.watch event (floor)', rawMs));
console.log(row('watchFiles batch (5 ms coalescing)', batchMs));

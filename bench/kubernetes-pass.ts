// In-process cost of one HTTPRoute edit through the whole Kubernetes path, stage by stage, at several sizes:
// the watch event parsed and stored, the snapshot, translation, discovery's diff and send, the proxy's receive,
// patch, validation, compile and swap (bench/kubernetes-pipeline.ts: the product's parts, real sockets, no
// cluster), then a request through the proxy that must answer 200 for the new name. The peer is the smallest
// size in the same run: an edit should cost about the same among 5,000 routes as among 5 (issue 27), so each
// stage's CPU time is printed with its ratio to the smallest size's. CPU time, not wall time: the machine is shared.
// Run: npm run bench:kubernetes-pass [-- --sizes 5,500,5000] [--edits 100]
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type Mark, startPipeline } from './kubernetes-pipeline.js';
import { median } from './load.js';
import { CONFIG_PATH_STAGES } from './propagation-stages.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '5,500,5000' },
    edits: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '20' },
    profile: { type: 'string' },
  },
});
const SIZES = values.sizes.split(',').map(Number);
const EDITS = Number(values.edits);
const WARMUP = Number(values.warmup);
/** --profile PREFIX: a V8 CPU profile of the measured edits of each size, to PREFIX-N.cpuprofile. */
const PROFILE = values.profile;

const session = new Session();
const profiler = {
  async start() {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  },
  async stop(file: string) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  },
};

/** The stages of one edit on its critical path, in order; each is timed from the one before. */
const CHAIN = ['bench-edit', 'event-applied', 'snapshot', ...CONFIG_PATH_STAGES] as const;
/** After the swap (in a cluster beside it, in the controller's own process): stamping and the status sink. */
const AFTER = ['statuses', 'sink-shown'] as const;

interface EditStages {
  cpu: Map<string, number>;
  wall: Map<string, number>;
}

/** The stages of the edit whose marks start at `from`: each stage's first mark after the previous one. */
function stagesOf(marks: Mark[], from: number): EditStages {
  const cpu = new Map<string, number>();
  const wall = new Map<string, number>();
  let previous = marks[from]!;
  let j = from + 1;
  for (const stage of [...CHAIN.slice(1), ...AFTER]) {
    const k = marks.findIndex((m, index) => index >= j && m.stage === stage);
    if (k === -1) continue;
    cpu.set(stage, marks[k]!.cpu - previous.cpu);
    wall.set(stage, marks[k]!.t - previous.t);
    previous = marks[k]!;
    j = k + 1;
  }
  return { cpu, wall };
}

async function measure(routes: number): Promise<{ stages: EditStages[]; failures: number; writes: number }> {
  const pipeline = await startPipeline(routes);
  const stages: EditStages[] = [];
  let failures = 0;
  await pipeline.idle();
  const writesBefore = pipeline.statusWrites();
  for (let k = 0; k < WARMUP + EDITS; k++) {
    const i = (k * 7919) % routes;
    const host = `edit-${k}.bench.test`;
    const from = pipeline.marks.length;
    await pipeline.edit(i, host, 2 + k);
    // The stamping and the sink run once the swap let them: wait for the sink before the next edit.
    await pipeline.reached('sink-shown', pipeline.marks[from]!.t);
    if ((await pipeline.get(host)) !== 200) failures++;
    if (k === WARMUP - 1 && PROFILE !== undefined) await profiler.start();
    if (k >= WARMUP) stages.push(stagesOf(pipeline.marks, from));
    pipeline.marks.length = 0;
  }
  if (PROFILE !== undefined) await profiler.stop(`${PROFILE}-${routes}.cpuprofile`);
  await pipeline.idle();
  const writes = pipeline.statusWrites() - writesBefore;
  await pipeline.close();
  return { stages, failures, writes };
}

const results = new Map<number, Awaited<ReturnType<typeof measure>>>();
for (const size of SIZES) {
  results.set(size, await measure(size));
  console.error(`size ${size} done (load ${loadavg()[0]!.toFixed(1)})`);
}

const stageCpu = (size: number, stage: string) =>
  median(results.get(size)!.stages.map((s) => s.cpu.get(stage) ?? 0));
const totalCpu = (size: number, stages: readonly string[]) =>
  median(results.get(size)!.stages.map((s) => stages.reduce((a, st) => a + (s.cpu.get(st) ?? 0), 0)));
const totalWall = (size: number, stages: readonly string[]) =>
  median(results.get(size)!.stages.map((s) => stages.reduce((a, st) => a + (s.wall.get(st) ?? 0), 0)));
const peer = SIZES[0]!;
const f = (n: number) => n.toFixed(3);
const ratio = (n: number, base: number) => (base > 0 ? `${(n / base).toFixed(1)}×` : '–');

console.log(
  `one HTTPRoute edited among N, ${EDITS} edits after ${WARMUP} warm-up, in process: median CPU ms per stage, and its ratio to N = ${peer} (load ${loadavg()[0]!.toFixed(1)}, 2 vCPUs)`,
);
console.log(`| stage | ${SIZES.map((s) => `N = ${s}`).join(' | ')} |`);
console.log(`|---|${SIZES.map(() => '---|').join('')}`);
for (const stage of [...CHAIN.slice(1), ...AFTER]) {
  const cells = SIZES.map(
    (s) => `${f(stageCpu(s, stage))} (${ratio(stageCpu(s, stage), stageCpu(peer, stage))})`,
  );
  console.log(`| ${stage} | ${cells.join(' | ')} |`);
}
const chain = CHAIN.slice(1);
console.log(
  `| **edit → swapped, CPU** | ${SIZES.map((s) => `**${f(totalCpu(s, chain))}** (${ratio(totalCpu(s, chain), totalCpu(peer, chain))})`).join(' | ')} |`,
);
console.log(`| edit → swapped, wall | ${SIZES.map((s) => f(totalWall(s, chain))).join(' | ')} |`);
console.log(
  `| after the swap: statuses + sink, CPU | ${SIZES.map((s) => f(totalCpu(s, AFTER))).join(' | ')} |`,
);
console.log(
  `| status writes per edit | ${SIZES.map((s) => (results.get(s)!.writes / (EDITS + WARMUP)).toFixed(2)).join(' | ')} |`,
);
const failed = SIZES.filter((s) => results.get(s)!.failures > 0);
if (failed.length > 0) {
  console.log(
    `edits not served (no 200 after the swap): ${failed.map((s) => `${s}: ${results.get(s)!.failures}`).join(', ')}`,
  );
  process.exitCode = 1;
}

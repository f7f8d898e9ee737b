// Reads --trace-events lines (`<epoch ms> <pid> <cpu µs> <stage> <detail>`) and prints, per stage of one edit (its
// first stage → its last, e.g. file write → first 200), the wall time since the previous stage and, within one
// process, its CPU time. Used by bench/propagation.ts (standalone) and bench/propagation-kubernetes.ts (cluster).
import { readFile } from 'node:fs/promises';
import { median } from './load.js';

/** An edit's path from its translation to the proxy's swap, the same whatever fed the controller. */
export const CONFIG_PATH_STAGES = [
  'translated',
  'discovery-diffed',
  'discovery-sent',
  'proxy-received',
  'proxy-assembled',
  'proxy-validated',
  'proxy-compiled',
  'proxy-swapped',
] as const;

/** Standalone: file write → first 200. The proxy's Ack (after the swap) runs alongside the first 200. */
const STANDALONE_STAGES = [
  'bench-write',
  'fs-event',
  'gathered',
  'read',
  'parsed',
  'snapshot',
  ...CONFIG_PATH_STAGES,
  'bench-200',
] as const;

export interface TraceEvent {
  t: number;
  /** The process: its pid, prefixed by where its lines came from when several files are merged. */
  pid: string;
  cpuUs: number;
  stage: string;
}

/** The events of trace `text`; `source` prefixes each pid (pods each have their own pid 1). */
export function parseTrace(text: string, source = ''): TraceEvent[] {
  const events: TraceEvent[] = [];
  for (const line of text.split('\n')) {
    const [t, pid, cpu, stage] = line.split(' ');
    if (stage === undefined) continue;
    events.push({ t: Number(t), pid: `${source}${pid!}`, cpuUs: Number(cpu), stage });
  }
  return events.sort((a, b) => a.t - b.t);
}

/**
 * The per-stage table of the edits in `events`: each window runs from a `stages[0]` event to the next last-stage
 * event, and each stage is its first event after the previous stage's (a late event of an edit before is
 * skipped). Windows starting after an `until` event are left out.
 */
export function stageTable(events: TraceEvent[], stages: readonly string[], until?: string): string {
  const first = stages[0]!;
  const last = stages.at(-1)!;
  const end =
    until === undefined ? Number.POSITIVE_INFINITY : (events.find((e) => e.stage === until)?.t ?? Infinity);
  const wall = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  let windows = 0;
  for (let i = 0; i < events.length; i++) {
    if (events[i]!.stage !== first || events[i]!.t > end) continue;
    const found = new Map<string, TraceEvent>();
    let j = i;
    for (const stage of stages) {
      let k = j;
      while (k < events.length && events[k]!.stage !== stage && events[k]!.stage !== last) k++;
      if (events[k]?.stage === stage) {
        found.set(stage, events[k]!);
        j = k;
      }
    }
    if (!found.has(last)) continue;
    windows++;
    let previous: TraceEvent | undefined;
    for (const stage of stages) {
      const e = found.get(stage);
      if (e === undefined || e.t > found.get(last)!.t) continue;
      if (previous !== undefined) {
        (wall.get(stage) ?? wall.set(stage, []).get(stage)!).push(e.t - previous.t);
        if (previous.pid === e.pid)
          (cpu.get(stage) ?? cpu.set(stage, []).get(stage)!).push((e.cpuUs - previous.cpuUs) / 1000);
      }
      previous = e;
    }
  }
  const f = (v: number) => v.toFixed(2).padStart(7);
  const lines = [`stages of ${windows} edits (ms since the previous stage; cpu: same process only)`];
  for (const stage of stages.slice(1)) {
    const w = wall.get(stage) ?? [];
    const c = cpu.get(stage) ?? [];
    const mean = w.reduce((a, b) => a + b, 0) / Math.max(1, w.length);
    const cpuText = c.length === 0 ? '' : `  cpu median ${f(median(c))}`;
    lines.push(
      `  ${stage.padEnd(18)} n ${String(w.length).padStart(5)}  wall median ${f(median(w))}  mean ${f(mean)}${cpuText}`,
    );
  }
  return lines.join('\n');
}

/** The standalone bench's table for its idle phase (edits before `bench-idle-done`). */
export async function stageBreakdown(file: string): Promise<string> {
  return stageTable(parseTrace(await readFile(file, 'utf8')), STANDALONE_STAGES, 'bench-idle-done');
}

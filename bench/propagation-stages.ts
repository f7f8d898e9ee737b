// Reads the --trace-events file written during bench/propagation.ts and prints, per stage of one
// edit (file write → first 200), the wall time since the previous stage and, within one process, its CPU time.
// The proxy's Ack (after the swap) runs alongside the first 200, so it is not a stage here.
import { readFile } from 'node:fs/promises';

const STAGES = [
  'bench-write',
  'fs-event',
  'gathered',
  'read',
  'parsed',
  'snapshot',
  'translated',
  'discovery-diffed',
  'discovery-sent',
  'proxy-received',
  'proxy-assembled',
  'proxy-validated',
  'proxy-compiled',
  'proxy-swapped',
  'bench-200',
] as const;

interface TraceEvent {
  t: number;
  pid: string;
  cpuUs: number;
  stage: string;
}

function parse(text: string): TraceEvent[] {
  const events: TraceEvent[] = [];
  for (const line of text.split('\n')) {
    const [t, pid, cpu, stage] = line.split(' ');
    if (stage === undefined) continue;
    events.push({ t: Number(t), pid: pid!, cpuUs: Number(cpu), stage });
  }
  return events.sort((a, b) => a.t - b.t);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The per-stage table for the idle phase (edits between `bench-write` and `bench-200`, before `bench-idle-done`). */
export async function stageBreakdown(file: string): Promise<string> {
  const events = parse(await readFile(file, 'utf8'));
  const end = events.find((e) => e.stage === 'bench-idle-done')?.t ?? Number.POSITIVE_INFINITY;
  const wall = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  let windows = 0;
  for (let i = 0; i < events.length; i++) {
    if (events[i]!.stage !== 'bench-write' || events[i]!.t > end) continue;
    // Each stage: its first event after the previous stage's (a late event of the edit before is skipped).
    const first = new Map<string, TraceEvent>();
    let j = i;
    for (const stage of STAGES) {
      let k = j;
      while (k < events.length && events[k]!.stage !== stage && events[k]!.stage !== 'bench-200') k++;
      if (events[k]?.stage === stage) {
        first.set(stage, events[k]!);
        j = k;
      }
    }
    if (!first.has('bench-200')) continue;
    windows++;
    let previous: TraceEvent | undefined;
    for (const stage of STAGES) {
      const e = first.get(stage);
      if (e === undefined || e.t > first.get('bench-200')!.t) continue;
      if (previous !== undefined) {
        (wall.get(stage) ?? wall.set(stage, []).get(stage)!).push(e.t - previous.t);
        if (previous.pid === e.pid)
          (cpu.get(stage) ?? cpu.set(stage, []).get(stage)!).push((e.cpuUs - previous.cpuUs) / 1000);
      }
      previous = e;
    }
  }
  const f = (v: number) => v.toFixed(2).padStart(7);
  const lines = [`stages of ${windows} idle edits (ms since the previous stage; cpu: same process only)`];
  for (const stage of STAGES.slice(1)) {
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

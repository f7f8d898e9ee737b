// Reads a V8 CPU profile (`node --cpu-prof`) into the functions that took the most time of their own, over a
// window of the monotonic clock only (a bench's measured requests, not the process's start or warm-up).
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock (what process.hrtime reads). */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionTime {
  name: string;
  /** Share of the window's samples, 0 to 1. */
  share: number;
}

/** `functionName file:line`, the file's path shortened to what follows the last `/dist/` or `/node_modules/`. */
function label(frame: ProfileNode['callFrame']): string {
  const url = frame.url.replace(/^file:\/\//, '');
  const short = url.replace(/^.*\/(dist|node_modules)\//, '$1/');
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  return short === '' ? name : `${name} ${short}:${frame.lineNumber + 1}`;
}

/** The `top` functions by own time among the samples taken between `fromUs` and `toUs` (monotonic µs). */
export function topSelfTime(file: string, fromUs: number, toUs: number, top: number): FunctionTime[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, label(n.callFrame)]));
  const counts = new Map<string, number>();
  let at = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs || at > toUs) continue;
    const name = byId.get(profile.samples[i]!) ?? '?';
    counts.set(name, (counts.get(name) ?? 0) + 1);
    total++;
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, n]) => ({ name, share: n / total }));
}

// Opt-in timestamps along one config edit (file event → proxy swap), for finding where propagation time goes.
// PORTICO_TRACE_PROPAGATION=<file>: every process (controller, proxies) appends `<epoch ms> <pid> <cpu µs>
// <stage> <detail>` lines to that file; unset, each call is one comparison.
import { openSync, writeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const target = process.env.PORTICO_TRACE_PROPAGATION;
let fd: number | undefined;

/** Whether stage timestamps are being written (so callers can skip building details). */
export const tracingPropagation = target !== undefined && target !== '';

/** Records that `stage` was reached now; `detail` names what (a file, a version). */
export function traceStage(stage: string, detail = ''): void {
  if (!tracingPropagation) return;
  fd ??= openSync(target!, 'a');
  const cpu = process.cpuUsage();
  const now = (performance.timeOrigin + performance.now()).toFixed(3);
  // One write per line with O_APPEND: lines of several processes never interleave.
  writeSync(fd, `${now} ${process.pid} ${cpu.user + cpu.system} ${stage} ${detail}\n`);
}

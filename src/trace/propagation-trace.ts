// Timestamps along one config edit (file event → proxy swap), for finding where propagation time goes: an
// operator's diagnostics, on only when a command is given `--trace-events FILE`, which it turns into this hook.
import { openSync, writeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { PorticoError } from '../platform/errors.js';

/** Called when a config edit reaches `stage`; `detail` names what (a file, a version). */
export type StageTrace = (stage: string, detail?: string) => void;

/** The trace file `--trace-events` names, else $PORTICO_TRACE_EVENTS; undefined (off) when neither or empty. */
export function traceEventsFile(flag: string | undefined, env = process.env): string | undefined {
  const file = flag ?? env.PORTICO_TRACE_EVENTS;
  return file === '' ? undefined : file;
}

/**
 * A StageTrace appending `<epoch ms> <pid> <cpu µs> <stage> <detail>` lines to `file`, which several processes
 * (the controller, its proxies and their workers) may share. `option` names the file's source in an error.
 */
export function appendStageTrace(file: string, option = '--trace-events'): StageTrace {
  let fd: number;
  try {
    fd = openSync(file, 'a');
  } catch (error) {
    throw new PorticoError('E_IO', `${option}: cannot open ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return (stage, detail = '') => {
    const cpu = process.cpuUsage();
    const now = (performance.timeOrigin + performance.now()).toFixed(3);
    // One write per line with O_APPEND: lines of several processes never interleave.
    writeSync(fd, `${now} ${process.pid} ${cpu.user + cpu.system} ${stage} ${detail}\n`);
  };
}

// Is pid N still the process we started? A pid is reused once its process is gone, so a recorded pid proves
// nothing alone: on Linux its start time (clock ticks since boot, /proc/N/stat field 22) and its exact command
// line must match too. Where /proc is missing, the caller must find another proof (the proxy's admin API).
import { readFileSync } from 'node:fs';

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The process's start time as /proc reports it, or undefined (no /proc, or no such process). */
export function processStartTime(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2 (the command name) is parenthesised and may hold spaces or parentheses: count after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19]; // field 22 of the whole line
}

/** argv of the process, or undefined when it cannot be read. */
export function commandLine(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.endsWith('\0') ? raw.slice(0, -1).split('\0') : raw.split('\0');
  } catch {
    return undefined;
  }
}

export interface ExpectedProcess {
  pid: number;
  /** From `processStartTime` when the process was started; absent where /proc was missing. */
  startTime?: string;
  argv: readonly string[];
}

/**
 * `yes`: alive with the recorded start time and argv; `no`: gone or someone else; `unknown`: alive, but this
 * system offers no way to tell.
 */
export function matchesProcess(expected: ExpectedProcess): 'yes' | 'no' | 'unknown' {
  if (!isAlive(expected.pid)) return 'no';
  const argv = commandLine(expected.pid);
  const started = processStartTime(expected.pid);
  if (argv === undefined || started === undefined) return 'unknown';
  if (expected.startTime !== undefined && started !== expected.startTime) return 'no';
  const same = argv.length === expected.argv.length && argv.every((a, i) => a === expected.argv[i]);
  return same ? 'yes' : 'no';
}

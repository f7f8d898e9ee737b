// The supervisor's handle on one proxy process: one it started (detached, in its own session, its output
// appended to a log file instead of a pipe that would break when the supervisor dies), or one it adopted from
// an earlier supervisor (not its child: no exit event, so its pid is polled, with the start time guarding reuse).
import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, fstatSync, openSync, renameSync, statSync, truncateSync } from 'node:fs';
import { isAlive, processStartTime } from './process-identity.js';

export interface ProcessExit {
  code: number | null;
  signal: string | null;
}

export interface WatchedProcess {
  /** 0 when the process could not be started. */
  pid: number;
  adopted: boolean;
  kill(signal: NodeJS.Signals): void;
  /** Resolves once the process is gone (code and signal are unknown for an adopted process). */
  exited: Promise<ProcessExit>;
  /** Stop watching; the process keeps running. */
  release(): void;
}

// How often an adopted process is checked for being gone.
const ADOPTED_POLL_MS = 250;

export interface SpawnedProcess {
  process: WatchedProcess;
  /** Resolves once the process runs (never for one that could not be started). */
  spawned: Promise<void>;
  /** Where the log file ended before this process wrote to it. */
  logOffset: number;
}

/**
 * Starts `argv` detached, its stderr appended to `logFile` and its stdout to `stdoutFile` (or `logFile` too),
 * each moved to `<file>.1` first when larger than `maxLogBytes`. `onError` hears why it could not start.
 */
export function spawnDetached(
  argv: readonly string[],
  options: {
    env: NodeJS.ProcessEnv;
    logFile: string;
    stdoutFile?: string;
    maxLogBytes: number;
    onError: (message: string) => void;
  },
): SpawnedProcess {
  const fd = openLog(options.logFile, options.maxLogBytes);
  const outFd = options.stdoutFile === undefined ? fd : openLog(options.stdoutFile, options.maxLogBytes);
  const logOffset = fstatSync(fd).size;
  let child: ReturnType<typeof spawn>;
  try {
    // Its own session: a Ctrl-C or hang-up of the supervisor's terminal never reaches it.
    child = spawn(argv[0]!, argv.slice(1), {
      detached: true,
      stdio: ['ignore', outFd, fd],
      env: options.env,
    });
  } finally {
    closeSync(fd);
    if (outFd !== fd) closeSync(outFd);
  }
  child.unref();
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => {
      options.onError(`cannot start the proxy process: ${error.message}`);
      // A failed spawn has no exit event; a failed kill of a live child does, so only end a spawn failure.
      if (child.pid === undefined) resolve({ code: null, signal: null });
    });
  });
  const spawned = new Promise<void>((resolve) => child.once('spawn', () => resolve()));
  return {
    process: {
      pid: child.pid ?? 0,
      adopted: false,
      kill: (signal) => child.kill(signal),
      exited,
      release: () => child.removeAllListeners(),
    },
    spawned,
    logOffset,
  };
}

function openLog(file: string, maxBytes: number): number {
  try {
    if (statSync(file).size > maxBytes) renameSync(file, `${file}.1`);
  } catch {
    // No log yet.
  }
  return openSync(file, 'a', 0o600);
}

/**
 * Keeps a log a running process appends to within `maxBytes`: its content moves to `<file>.1` and the file is
 * emptied in place, so the writer's descriptor (opened for appending) goes on at the new end. Lines written
 * between the copy and the truncation are lost, a bounded cost for never growing without end.
 */
export function trimLog(file: string, maxBytes: number): void {
  try {
    if (statSync(file).size <= maxBytes) return;
    copyFileSync(file, `${file}.1`);
    truncateSync(file, 0);
  } catch {
    // Gone or unreadable: nothing to trim.
  }
}

/** Watches a process another supervisor started; `startTime` (from /proc) tells it from a later one with its pid. */
export function watchAdopted(target: { pid: number; startTime?: string }): WatchedProcess {
  const same = () => isAlive(target.pid) && processStartTime(target.pid) === target.startTime;
  let timer: NodeJS.Timeout | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    timer = setInterval(() => {
      if (same()) return;
      clearInterval(timer);
      resolve({ code: null, signal: null });
    }, ADOPTED_POLL_MS);
    timer.unref();
  });
  return {
    pid: target.pid,
    adopted: true,
    kill: (signal) => {
      // Never signal a pid that now belongs to another process.
      if (!same()) return;
      try {
        process.kill(target.pid, signal);
      } catch {
        // Gone already: the poll notices.
      }
    },
    exited,
    release: () => clearInterval(timer),
  };
}

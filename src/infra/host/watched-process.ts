// The supervisor's handle on one proxy process: one it started (detached, in its own session, its output
// appended to a log file instead of a pipe that would break when the supervisor dies), or one it adopted from
// an earlier supervisor (not its child: no exit event, so its pid is polled, with the start time guarding reuse).
import { spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync, renameSync, statSync } from 'node:fs';
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
 * Starts `argv` detached, its stdout and stderr appended to `logFile` (moved to `<file>.1` first when larger
 * than `maxLogBytes`). `onError` hears why it could not start.
 */
export function spawnDetached(
  argv: readonly string[],
  options: {
    env: NodeJS.ProcessEnv;
    logFile: string;
    maxLogBytes: number;
    onError: (message: string) => void;
  },
): SpawnedProcess {
  try {
    if (statSync(options.logFile).size > options.maxLogBytes)
      renameSync(options.logFile, `${options.logFile}.1`);
  } catch {
    // No log yet.
  }
  const fd = openSync(options.logFile, 'a', 0o600);
  const logOffset = fstatSync(fd).size;
  let child: ReturnType<typeof spawn>;
  try {
    // Its own session: a Ctrl-C or hang-up of the supervisor's terminal never reaches it.
    child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', fd, fd], env: options.env });
  } finally {
    closeSync(fd);
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

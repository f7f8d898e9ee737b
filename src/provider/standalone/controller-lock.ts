// One controller per state directory: two would adopt, restart and stop the same proxies against each other.
// The lock is a file naming the holder's pid, start time and command line, so a holder that died (kill -9)
// leaves a lock the next controller recognises as stale.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  commandLine,
  type ExpectedProcess,
  matchesProcess,
  processStartTime,
} from '../../infra/host/process-identity.js';
import { PorticoError } from '../../platform/errors.js';

export const CONTROLLER_LOCK_FILE = 'controller.json';

export interface ControllerLock {
  release(): void;
}

/** The live controller holding `stateDir`, if any. */
export function lockHolder(stateDir: string): ExpectedProcess | undefined {
  let holder: ExpectedProcess;
  try {
    holder = JSON.parse(readFileSync(join(stateDir, CONTROLLER_LOCK_FILE), 'utf8')) as ExpectedProcess;
  } catch {
    return undefined;
  }
  if (!Number.isInteger(holder.pid) || !Array.isArray(holder.argv)) return undefined;
  return matchesProcess(holder) === 'no' ? undefined : holder;
}

export function acquireControllerLock(stateDir: string): ControllerLock {
  const file = join(stateDir, CONTROLLER_LOCK_FILE);
  const self: ExpectedProcess = { pid: process.pid, argv: commandLine(process.pid) ?? process.argv };
  const startTime = processStartTime(process.pid);
  if (startTime !== undefined) self.startTime = startTime;
  const text = `${JSON.stringify(self)}\n`;
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, text, { flag: 'wx', mode: 0o600 });
      return {
        release() {
          if (lockHolder(stateDir)?.pid === process.pid) rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new PorticoError('E_IO', `--state-dir: cannot write ${file}: ${(error as Error).message}`);
      }
    }
    const holder = lockHolder(stateDir);
    if (holder !== undefined) {
      throw new PorticoError(
        'E_CONFIG',
        `--state-dir: another standalone controller (pid ${holder.pid}) uses ${stateDir}; stop it first ` +
          `('portico standalone --stop --state-dir ${stateDir}') or give this one its own --state-dir`,
      );
    }
    rmSync(file, { force: true }); // left by a controller that is gone
  }
  throw new PorticoError('E_IO', `--state-dir: cannot lock ${stateDir}: another controller keeps taking it`);
}

// One running cluster component: a process inside the node, its log file, and a bounded wait for readiness
// that fails with the component's log tail instead of hanging.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { nodeCommand } from './node-host.js';

/** How a component was started: enough to start it again, from this process or another one. */
export interface ComponentSpec {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}

export interface Component {
  name: string;
  log: string;
  spec: ComponentSpec;
  pid: number;
  child?: ChildProcess;
  /** Set once the process has exited (known only to the process that started it). */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

export class ClusterStartError extends Error {
  constructor(
    readonly component: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ComponentHost {
  holderPid: number;
  systemCgroup: string;
  logDir: string;
}

export function logTail(path: string, lines = 40): string {
  try {
    const size = statSync(path).size;
    const text = readFileSync(path, 'utf8').slice(Math.max(0, size - 64 * 1024));
    return text.split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export function startComponent(host: ComponentHost, spec: ComponentSpec): Component {
  const log = join(host.logDir, `${spec.name}.log`);
  const fd = openSync(log, 'a');
  const [cmd, cmdArgs] = nodeCommand(host.holderPid, host.systemCgroup, spec.command, spec.args);
  const child = spawn(cmd, cmdArgs, {
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ...spec.env },
    detached: true,
  });
  closeSync(fd);
  if (child.pid === undefined) throw new ClusterStartError(spec.name, `cannot start ${spec.command}`);
  const component: Component = { name: spec.name, log, spec, pid: child.pid, child };
  child.on('exit', (code, signal) => {
    component.exit = { code, signal };
  });
  child.unref();
  return component;
}

/** Polls `ready` until it resolves true; fails with the log tail if the component exits or time runs out. */
export async function waitReady(
  component: Component,
  ready: () => Promise<boolean>,
  timeoutMs: number,
  what = 'ready',
  signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    if (signal?.aborted) throw new ClusterStartError(component.name, 'cluster start interrupted');
    if (component.exit !== undefined) {
      throw new ClusterStartError(
        component.name,
        `${component.name} exited (${component.exit.code ?? component.exit.signal}) before it was ${what}; ` +
          `log ${component.log}:\n${logTail(component.log)}`,
      );
    }
    try {
      if (await ready()) return;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) {
      throw new ClusterStartError(
        component.name,
        `${component.name} not ${what} within ${timeoutMs / 1000} s${last === '' ? '' : ` (${last})`}; ` +
          `log ${component.log}:\n${logTail(component.log)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

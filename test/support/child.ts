// Runs the built `portico` CLI as a child process (build first: `npm run build`).
import { type ChildProcess, spawn } from 'node:child_process';
import { PORTICO_MAIN } from './portico.js';

export interface Child {
  process: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

export function startPortico(args: string[], env: NodeJS.ProcessEnv = {}): Child {
  const child = spawn(process.execPath, [PORTICO_MAIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    err += c;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { process: child, stdout: () => out, stderr: () => err, exited };
}

/** Resolves with the first match of `pattern` in the child's stdout (or stderr), or rejects when it exits. */
export function waitForOutput(child: Child, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const match = pattern.exec(child.stdout()) ?? pattern.exec(child.stderr());
      if (match === null) return;
      cleanup();
      resolve(match);
    };
    const onExit = (): void => {
      cleanup();
      reject(new Error(`exited before printing ${pattern}: ${child.stderr()}`));
    };
    const cleanup = (): void => {
      child.process.stdout?.off('data', check);
      child.process.stderr?.off('data', check);
      child.process.off('exit', onExit);
    };
    child.process.stdout?.on('data', check);
    child.process.stderr?.on('data', check);
    child.process.on('exit', onExit);
    check();
  });
}

/** waitForOutput, failing with what the child printed when nothing matches within `ms`. */
export async function waitForOutputWithin(
  child: Child,
  pattern: RegExp,
  ms = 60_000,
): Promise<RegExpExecArray> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`printed no ${pattern} within ${ms} ms:\n${child.stdout()}${child.stderr()}`)),
      ms,
    );
  });
  return Promise.race([waitForOutput(child, pattern), timeout]).finally(() => clearTimeout(timer));
}

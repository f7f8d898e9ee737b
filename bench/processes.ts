// The processes a proxy benchmark starts and measures: children it kills at the end, the port a child reports,
// a free loopback port, and the CPU time of a process tree from /proc.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';

/** Every process a bench started: killed when it ends. */
export const children: ChildProcess[] = [];

export function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const CLOCK_TICKS = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of a process in microseconds (Linux /proc), or undefined elsewhere. */
function cpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** `root` and every process below it (nginx's master and workers, Portico's primary and workers), via /proc. */
export function processTree(root: number | undefined): number[] {
  if (root === undefined) return [];
  const parents = new Map<number, number>();
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      } catch {
        // Exited meanwhile.
      }
    }
  } catch {
    return [root]; // Not Linux: the root alone.
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, parent] of parents) if (parent === tree[i]) tree.push(pid);
  }
  return tree;
}

/** CPU time of several processes; undefined when any cannot be read. */
export function cpuMicrosOf(pids: number[]): number | undefined {
  let sum = 0;
  for (const pid of pids) {
    const us = cpuMicros(pid);
    if (us === undefined) return undefined;
    sum += us;
  }
  return pids.length === 0 ? undefined : sum;
}

/** Starts a child and resolves with the port it reports on stdout/stderr, and its pid. */
export function startChild(
  command: string,
  args: string[],
  pattern: RegExp,
): Promise<{ port: number; pid: number | undefined; output: () => string }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (c: Buffer): void => {
      seen += c.toString();
      const m = pattern.exec(seen);
      if (m !== null) resolve({ port: Number(m[1]), pid: child.pid, output: () => seen });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${command} exited (${code}): ${seen}`)));
  });
}

/** A port free on loopback right now (the OS picks it), for nginx, which cannot report one it chose. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

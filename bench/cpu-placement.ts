// Where the latency bench's processes run. On a small VM the p99 at 1,000 req/s is the scheduler's unless
// placement is fixed: a wakeup across vCPUs costs milliseconds at p99 there (a Python echo between two
// pinned processes: p99 0.16 ms on one vCPU, 2.8 ms across two), more than the 1 ms target itself.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * one: load generator, backend and proxy share CPU 0 (no cross-CPU wakeups: the lowest floor on a VM).
 * client: the load generator alone on CPU 0, backend and proxy on CPU 1 (the client is elsewhere, as across
 *   a network: a direct and a proxied request cross CPUs equally often, so "added" is the proxy's own).
 * split: the proxy alone on CPU 1, the rest on CPU 0 (a proxied request crosses CPUs four times, a direct one
 *   never: "added" includes those wakeups).
 * off: the scheduler decides.
 */
type PinMode = 'one' | 'client' | 'split' | 'off';

interface Placement {
  load: number;
  proxy: number;
  backend: number;
}

export function parsePinMode(value: string): PinMode {
  if (value === 'one' || value === 'client' || value === 'split' || value === 'off') return value;
  throw new Error(`--pin: expected one, client, split or off, got ${JSON.stringify(value)}`);
}

export function placement(mode: PinMode, cpus: number): Placement | undefined {
  if (mode === 'off') return undefined;
  if (mode === 'one' || cpus < 2) return { load: 0, proxy: 0, backend: 0 };
  if (mode === 'client') return { load: 0, proxy: 1, backend: 1 };
  return { load: 0, proxy: 1, backend: 0 };
}

/** Moves every thread of `pid` to `cpu`; false when taskset is missing or refuses (not Linux, no such CPU). */
export function pin(pid: number, cpu: number): boolean {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Busy and stolen jiffies of the whole machine (Linux /proc/stat), or undefined elsewhere. */
interface CpuTimes {
  total: number;
  steal: number;
}

export function cpuTimes(): CpuTimes | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already inside user).
    return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
  } catch {
    return undefined;
  }
}

/** The share of CPU time the hypervisor took between two readings, in percent. */
export function stealPercent(before: CpuTimes | undefined, after: CpuTimes | undefined): number {
  if (before === undefined || after === undefined || after.total === before.total) return Number.NaN;
  return ((after.steal - before.steal) / (after.total - before.total)) * 100;
}

/**
 * Keeps every vCPU from halting while the latency rounds run: one busy loop per CPU at SCHED_IDLE priority,
 * which runs only when nothing else wants that CPU. A halted vCPU takes milliseconds to wake on this kind of
 * VM (its haltpoll driver is set not to poll), which no proxy can hide; latency-tuned hosts poll instead
 * (idle=poll, haltpoll's guest_halt_poll_ns). Returns a stop function; undefined when chrt or taskset is missing.
 */
export function keepCpusAwake(cpus: number): (() => void) | undefined {
  const spinners: ChildProcess[] = [];
  try {
    execFileSync('sh', ['-c', 'command -v chrt && command -v taskset'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  for (let cpu = 0; cpu < cpus; cpu++) {
    // The loop ends by itself once the bench is gone (killed by a signal, say, before it could stop it).
    const loop = `while kill -0 ${process.pid} 2>/dev/null; do :; done`;
    const args = ['-c', String(cpu), 'chrt', '--idle', '0', 'sh', '-c', loop];
    const spinner = spawn('taskset', args, { stdio: 'ignore' });
    // A spinner that cannot start only leaves that vCPU free to halt; the bench goes on.
    spinner.on('error', () => {});
    spinners.push(spinner);
  }
  return () => {
    for (const spinner of spinners) spinner.kill('SIGKILL');
  };
}

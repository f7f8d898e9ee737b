// Keeps one `portico proxy` child process per fleet: starts missing ones, restarts crashed ones with capped
// exponential backoff, drains removed ones (SIGTERM, then SIGKILL after a grace period), and restarts one
// whose command line changed. The standalone controller's host infrastructure, as Deployments are in a cluster.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { PorticoError } from '../../errors.js';
import { createPidFileWriter } from './orphan-proxies.js';

export interface ProxySpec {
  fleet: string;
  /** The loopback address the proxy binds (also passed in `args` as `--bind-address`). */
  address: string;
  /** The command line after `portico`, e.g. `['proxy', '--fleet', 'default/eg', ...]`. */
  args: readonly string[];
}

export type ProxyProcessState = 'starting' | 'running' | 'backoff' | 'stopping';

export interface ProxyExit {
  code: number | null;
  signal: string | null;
  /** RFC 3339 */
  at: string;
}

export interface ProxyProcessInfo {
  fleet: string;
  address: string;
  pid?: number;
  state: ProxyProcessState;
  /** How many times the process was started again after the first start (crash or changed args). */
  restarts: number;
  lastExit?: ProxyExit;
}

export interface ProxyLogLine {
  fleet: string;
  stream: 'stdout' | 'stderr';
  line: string;
}

export interface ProxySupervisorOptions {
  /** The script run as `execPath ...execArgv entryPoint ...args`. Default: `dist/cli/main.js`. */
  entryPoint?: string;
  execPath?: string;
  execArgv?: readonly string[];
  /** Added to this process's environment for the children. */
  env?: Readonly<Record<string, string>>;
  /** Every line a child writes. Default: `[fleet] line` on this process's stderr. */
  log?: (line: ProxyLogLine) => void;
  /** Called whenever a process starts, runs, exits, backs off or goes away: read `list()` again. */
  onChange?: () => void;
  /** First restart delay after a crash; doubles per consecutive crash up to `backoffMaxMs`. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** A process that ran this long before crashing starts the backoff over. */
  stableAfterMs?: number;
  /** Time between SIGTERM and SIGKILL; longer than the proxy's maximum drain (60 s) by default. */
  stopGraceMs?: number;
  /** Where the children's pids are recorded (`<state-dir>/proxies.json`), for `stopOrphanProxies` after a crash. */
  pidFile?: string;
}

export interface ProxySupervisor {
  /** Makes the running set equal `desired` (fleet keys must be unique). Returns at once; work is async. */
  sync(desired: readonly ProxySpec[]): void;
  list(): ProxyProcessInfo[];
  /** Drains and stops every process; resolves once all have exited. `sync` is refused afterwards. */
  stopAll(): Promise<void>;
}

export const SUPERVISOR_DEFAULTS = {
  backoffInitialMs: 500,
  backoffMaxMs: 30_000,
  stableAfterMs: 60_000,
  stopGraceMs: 65_000,
};

const DEFAULT_ENTRY_POINT = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

/** The delay before restart number `failures` (1-based) of a crash loop. */
export function backoffDelay(failures: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, failures - 1));
}

export function formatProxyLogLine({ fleet, line }: ProxyLogLine): string {
  return `[${fleet}] ${line}`;
}

interface Slot {
  spec: ProxySpec;
  /** False once the fleet left the desired set: the slot goes away when its process has exited. */
  wanted: boolean;
  state: ProxyProcessState;
  child?: ChildProcess;
  /** Set when we asked the child to stop: its exit is not a crash. */
  stopRequested: boolean;
  restarts: number;
  /** Consecutive crashes, for the backoff. */
  failures: number;
  startedAt: number;
  lastExit?: ProxyExit;
  backoffTimer?: NodeJS.Timeout;
  killTimer?: NodeJS.Timeout;
  exited?: Promise<void>;
}

export function createProxySupervisor(options: ProxySupervisorOptions = {}): ProxySupervisor {
  const settings = {
    backoffInitialMs: options.backoffInitialMs ?? SUPERVISOR_DEFAULTS.backoffInitialMs,
    backoffMaxMs: options.backoffMaxMs ?? SUPERVISOR_DEFAULTS.backoffMaxMs,
    stableAfterMs: options.stableAfterMs ?? SUPERVISOR_DEFAULTS.stableAfterMs,
    stopGraceMs: options.stopGraceMs ?? SUPERVISOR_DEFAULTS.stopGraceMs,
  };
  const entryPoint = options.entryPoint ?? DEFAULT_ENTRY_POINT;
  const execPath = options.execPath ?? process.execPath;
  const execArgv = options.execArgv ?? [];
  const log = options.log ?? ((l: ProxyLogLine) => process.stderr.write(`${formatProxyLogLine(l)}\n`));
  const slots = new Map<string, Slot>();
  let shuttingDown = false;
  const writePids = options.pidFile === undefined ? undefined : createPidFileWriter(options.pidFile);

  function recordPids(): void {
    writePids?.(
      [...slots.values()].flatMap((s) =>
        s.child?.pid === undefined ? [] : [{ fleet: s.spec.fleet, pid: s.child.pid, entryPoint }],
      ),
    );
  }

  function info(slot: Slot): ProxyProcessInfo {
    const out: ProxyProcessInfo = {
      fleet: slot.spec.fleet,
      address: slot.spec.address,
      state: slot.state,
      restarts: slot.restarts,
    };
    if (slot.child?.pid !== undefined) out.pid = slot.child.pid;
    if (slot.lastExit !== undefined) out.lastExit = slot.lastExit;
    return out;
  }

  function setState(slot: Slot, state: ProxyProcessState): void {
    slot.state = state;
    recordPids();
    options.onChange?.();
  }

  function start(slot: Slot): void {
    slot.stopRequested = false;
    slot.startedAt = Date.now();
    const { fleet } = slot.spec;
    const child = spawn(execPath, [...execArgv, entryPoint, ...slot.spec.args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    slot.child = child;
    for (const stream of ['stdout', 'stderr'] as const) {
      const source = child[stream];
      if (source !== null)
        createInterface({ input: source }).on('line', (line) => log({ fleet, stream, line }));
    }
    slot.exited = new Promise<void>((resolve) => {
      let gone = false;
      const onGone = (code: number | null, signal: string | null) => {
        if (gone) return;
        gone = true;
        exitedChild(slot, child, code, signal);
        resolve();
      };
      child.once('exit', onGone);
      child.once('error', (error) => {
        log({ fleet, stream: 'stderr', line: `cannot start the proxy process: ${error.message}` });
        // A failed spawn has no exit event; a failed kill of a live child does, so only end a spawn failure.
        if (child.pid === undefined) onGone(null, null);
      });
    });
    child.once('spawn', () => {
      if (slot.child === child && slot.state === 'starting') setState(slot, 'running');
    });
    setState(slot, 'starting');
  }

  function exitedChild(slot: Slot, child: ChildProcess, code: number | null, signal: string | null): void {
    if (slot.child !== child) return;
    clearTimeout(slot.killTimer);
    slot.child = undefined;
    slot.lastExit = { code, signal, at: new Date().toISOString() };
    if (!slot.wanted) {
      slots.delete(slot.spec.fleet);
      recordPids();
      options.onChange?.();
      return;
    }
    if (slot.stopRequested) {
      // Stopped on purpose to apply a new command line: start again at once.
      slot.restarts++;
      start(slot);
      return;
    }
    if (Date.now() - slot.startedAt >= settings.stableAfterMs) slot.failures = 0;
    slot.failures++;
    const delay = backoffDelay(slot.failures, settings.backoffInitialMs, settings.backoffMaxMs);
    log({
      fleet: slot.spec.fleet,
      stream: 'stderr',
      line: `proxy exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`,
    });
    setState(slot, 'backoff');
    slot.backoffTimer = setTimeout(() => {
      slot.backoffTimer = undefined;
      slot.restarts++;
      start(slot);
    }, delay);
  }

  function stop(slot: Slot): void {
    clearTimeout(slot.backoffTimer);
    slot.backoffTimer = undefined;
    const child = slot.child;
    if (child === undefined) {
      if (!slot.wanted) {
        slots.delete(slot.spec.fleet);
        options.onChange?.();
        return;
      }
      slot.restarts++;
      start(slot);
      return;
    }
    if (slot.stopRequested) return; // already draining
    slot.stopRequested = true;
    setState(slot, 'stopping');
    child.kill('SIGTERM');
    slot.killTimer = setTimeout(() => child.kill('SIGKILL'), settings.stopGraceMs);
  }

  return {
    sync(desired) {
      if (shuttingDown) throw new PorticoError('E_USAGE', 'the proxy supervisor is shutting down');
      const byFleet = new Map<string, ProxySpec>();
      for (const spec of desired) {
        if (byFleet.has(spec.fleet)) {
          throw new PorticoError('E_USAGE', `proxy supervisor: fleet '${spec.fleet}' is listed twice`);
        }
        byFleet.set(spec.fleet, { ...spec, args: [...spec.args] });
      }
      for (const slot of slots.values()) {
        if (byFleet.has(slot.spec.fleet)) continue;
        slot.wanted = false;
        stop(slot);
      }
      for (const spec of byFleet.values()) {
        const slot = slots.get(spec.fleet);
        if (slot === undefined) {
          const fresh: Slot = {
            spec,
            wanted: true,
            state: 'starting',
            stopRequested: false,
            restarts: 0,
            failures: 0,
            startedAt: 0,
          };
          slots.set(spec.fleet, fresh);
          start(fresh);
          continue;
        }
        const changed = !sameSpec(slot.spec, spec);
        slot.spec = spec;
        slot.wanted = true;
        if (changed) {
          slot.failures = 0;
          if (slot.state !== 'stopping') stop(slot);
        }
      }
    },
    list() {
      return [...slots.values()]
        .map(info)
        .sort((a, b) => (a.fleet < b.fleet ? -1 : a.fleet > b.fleet ? 1 : 0));
    },
    async stopAll() {
      shuttingDown = true;
      const waits: Promise<void>[] = [];
      for (const slot of [...slots.values()]) {
        slot.wanted = false;
        if (slot.child !== undefined && slot.exited !== undefined) waits.push(slot.exited);
        stop(slot);
      }
      await Promise.all(waits);
    },
  };
}

function sameSpec(a: ProxySpec, b: ProxySpec): boolean {
  return (
    a.address === b.address && a.args.length === b.args.length && a.args.every((x, i) => x === b.args[i])
  );
}

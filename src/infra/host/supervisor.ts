// Keeps one `portico proxy` process per fleet: starts missing ones, restarts crashed ones with capped
// exponential backoff, drains removed ones (SIGTERM, then SIGKILL after a grace period), restarts one whose
// command line changed, and restarts one that stops answering its liveness probe (hung, or drained without
// being asked to). The standalone controller's host infrastructure, as Deployments and kubelet are in a cluster.
//
// Proxies outlive the supervisor: each runs in its own session (no terminal signal reaches it), writes to its own
// log file (no pipe to break), and is recorded under the records directory. `detach()` lets go of them; a later
// supervisor `adopt()`s the records whose process is still the one that was started.
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT_ADDRESS_IN_USE, PorticoError } from '../../errors.js';
import { logToStderr } from '../../log-line.js';
import { fleetInfraName } from '../../translate/naming.js';
import { type ProbeTarget, probeLiveness } from './liveness-probe.js';
import { followLog, type LogFollower } from './log-follower.js';
import { processStartTime } from './process-identity.js';
import { type ProxyRecord, removeProxyRecord, writeProxyRecord } from './proxy-records.js';
import { spawnDetached, type WatchedProcess, watchAdopted } from './watched-process.js';

export interface ProxySpec {
  fleet: string;
  /** The loopback address the proxy binds (also passed in `args` as `--bind-address`). */
  address: string;
  /** The command line after `portico`, e.g. `['proxy', '--fleet', 'default/eg', ...]`. */
  args: readonly string[];
  /** Where the process answers whether it still serves (`GET /live`); absent: not probed. */
  liveness?: ProbeTarget;
}

export type ProxyProcessState = 'starting' | 'running' | 'backoff' | 'stopping';
/** `unknown` until the first probe answers (or for a process without a probe). */
export type ProxyHealth = 'unknown' | 'live' | 'failing';

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
  /** Started by an earlier supervisor and adopted by this one. */
  adopted: boolean;
  /** How many times the process was started again after the first start (crash, changed args, not live). */
  restarts: number;
  lastExit?: ProxyExit;
  health: ProxyHealth;
  /** Why the last liveness probe failed. */
  healthError?: string;
}

export interface ProxyLogLine {
  fleet: string;
  /** `proxy`: a line from the process's log file; `supervisor`: what the supervisor says about it. */
  source: 'proxy' | 'supervisor';
  line: string;
}

export interface ProxySupervisorOptions {
  /** Where each proxy's output goes: `<logDir>/<fleet infra name>.log`, appended to across restarts. */
  logDir: string;
  /** Where each running proxy is recorded, for adoption by a later supervisor; absent: not recorded. */
  recordsDir?: string;
  /** The script run as `execPath ...execArgv entryPoint ...args`. Default: `dist/cli/main.js`. */
  entryPoint?: string;
  execPath?: string;
  execArgv?: readonly string[];
  /** Added to this process's environment for the children. */
  env?: Readonly<Record<string, string>>;
  /** Every line a proxy logs, and every event. Default: `[fleet] line` on this process's stderr. */
  log?: (line: ProxyLogLine) => void;
  /** Called whenever a process starts, runs, exits, backs off or goes away: read `list()` again. */
  onChange?: () => void;
  /** A process exited because its address is in use (exit status 98): sync it with another address. */
  onAddressInUse?: (fleet: string, address: string) => void;
  /** First restart delay after a crash; doubles per consecutive crash up to `backoffMaxMs`. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** A process that ran this long before crashing starts the backoff over. */
  stableAfterMs?: number;
  /** Time between SIGTERM and SIGKILL; longer than the proxy's maximum drain (60 s) by default. */
  stopGraceMs?: number;
  /** Liveness: probe every so often, each probe's deadline, and how many failures in a row restart it. */
  probeIntervalMs?: number;
  probeTimeoutMs?: number;
  probeFailureThreshold?: number;
  /** A new process's failed probes count only once it answered one, or after this long (it may be starting). */
  probeStartupGraceMs?: number;
  /** A log file larger than this when its proxy (re)starts is moved to `<file>.1` first. */
  maxLogBytes?: number;
}

export interface ProxySupervisor {
  /**
   * Takes over processes a previous supervisor started (verified by the caller); call before the first sync.
   * One started by this same build is sent SIGHUP: a proxy then reconnects to discovery at once.
   */
  adopt(records: readonly ProxyRecord[]): void;
  /** Makes the running set equal `desired` (fleet keys must be unique). Returns at once; work is async. */
  sync(desired: readonly ProxySpec[]): void;
  list(): ProxyProcessInfo[];
  /** Drains and stops every process; resolves once all have exited. `sync` is refused afterwards. */
  stopAll(): Promise<void>;
  /** Lets go of every process, leaving it running and recorded for the next supervisor. */
  detach(): void;
}

export const SUPERVISOR_DEFAULTS = {
  backoffInitialMs: 500,
  backoffMaxMs: 30_000,
  stableAfterMs: 60_000,
  stopGraceMs: 65_000,
  // kubelet's defaults (10 s × 3) are for pods behind a Service; a host Gateway has no other replica.
  probeIntervalMs: 2_000,
  probeTimeoutMs: 2_000,
  probeFailureThreshold: 3,
  probeStartupGraceMs: 20_000,
  maxLogBytes: 10 * 1024 * 1024,
};

const DEFAULT_ENTRY_POINT = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

/** The delay before restart number `failures` (1-based) of a crash loop. */
export function backoffDelay(failures: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, failures - 1));
}

export function formatProxyLogLine({ fleet, line }: ProxyLogLine): string {
  return `[${fleet}] ${line}`;
}

/** The log file of a fleet's proxy. */
export function proxyLogFile(logDir: string, fleet: string): string {
  return join(logDir, `${fleetInfraName(fleet)}.log`);
}

interface Slot {
  spec: ProxySpec;
  /** The command line before the spec's args; an adopted process started by another build differs. */
  launcher: readonly string[];
  /** False once the fleet left the desired set: the slot goes away when its process has exited. */
  wanted: boolean;
  state: ProxyProcessState;
  process?: WatchedProcess;
  follower?: LogFollower;
  /** Set when we asked the process to stop: its exit is not a crash. */
  stopRequested: boolean;
  restarts: number;
  /** Consecutive crashes, for the backoff. */
  failures: number;
  startedAt: number;
  lastExit?: ProxyExit;
  backoffTimer?: NodeJS.Timeout;
  killTimer?: NodeJS.Timeout;
  exited?: Promise<void>;
  health: ProxyHealth;
  healthError?: string;
  /** Failed probes in a row of the current process. */
  probeFailures: number;
  /** The current process answered a probe once: it has started. */
  answered: boolean;
  probing: boolean;
}

export function createProxySupervisor(options: ProxySupervisorOptions): ProxySupervisor {
  const settings = {
    backoffInitialMs: options.backoffInitialMs ?? SUPERVISOR_DEFAULTS.backoffInitialMs,
    backoffMaxMs: options.backoffMaxMs ?? SUPERVISOR_DEFAULTS.backoffMaxMs,
    stableAfterMs: options.stableAfterMs ?? SUPERVISOR_DEFAULTS.stableAfterMs,
    stopGraceMs: options.stopGraceMs ?? SUPERVISOR_DEFAULTS.stopGraceMs,
    probeIntervalMs: options.probeIntervalMs ?? SUPERVISOR_DEFAULTS.probeIntervalMs,
    probeTimeoutMs: options.probeTimeoutMs ?? SUPERVISOR_DEFAULTS.probeTimeoutMs,
    probeFailureThreshold: options.probeFailureThreshold ?? SUPERVISOR_DEFAULTS.probeFailureThreshold,
    probeStartupGraceMs: options.probeStartupGraceMs ?? SUPERVISOR_DEFAULTS.probeStartupGraceMs,
    maxLogBytes: options.maxLogBytes ?? SUPERVISOR_DEFAULTS.maxLogBytes,
  };
  const entryPoint = options.entryPoint ?? DEFAULT_ENTRY_POINT;
  const execPath = options.execPath ?? process.execPath;
  const execArgv = options.execArgv ?? [];
  const launcher = [execPath, ...execArgv, entryPoint];
  const log = options.log ?? ((l: ProxyLogLine) => logToStderr(formatProxyLogLine(l)));
  const say = (fleet: string, line: string): void => log({ fleet, source: 'supervisor', line });
  const slots = new Map<string, Slot>();
  let shuttingDown = false;
  let detached = false;
  mkdirSync(options.logDir, { recursive: true, mode: 0o700 });

  function info(slot: Slot): ProxyProcessInfo {
    const out: ProxyProcessInfo = {
      fleet: slot.spec.fleet,
      address: slot.spec.address,
      state: slot.state,
      adopted: slot.process?.adopted === true,
      restarts: slot.restarts,
      health: slot.health,
    };
    if (slot.process !== undefined && slot.process.pid > 0) out.pid = slot.process.pid;
    if (slot.lastExit !== undefined) out.lastExit = slot.lastExit;
    if (slot.healthError !== undefined) out.healthError = slot.healthError;
    return out;
  }

  function setState(slot: Slot, state: ProxyProcessState): void {
    slot.state = state;
    options.onChange?.();
  }

  function resetHealth(slot: Slot): void {
    slot.health = 'unknown';
    slot.probeFailures = 0;
    slot.answered = false;
    delete slot.healthError;
  }

  function watch(slot: Slot, watched: WatchedProcess): void {
    slot.process = watched;
    slot.exited = watched.exited.then(({ code, signal }) => exitedProcess(slot, watched, code, signal));
  }

  function start(slot: Slot): void {
    slot.stopRequested = false;
    slot.startedAt = Date.now();
    resetHealth(slot);
    const { fleet } = slot.spec;
    slot.launcher = launcher;
    const argv = [...launcher, ...slot.spec.args];
    const logFile = proxyLogFile(options.logDir, fleet);
    const started = spawnDetached(argv, {
      env: { ...process.env, ...options.env },
      logFile,
      maxLogBytes: settings.maxLogBytes,
      onError: (message) => say(fleet, message),
    });
    slot.follower?.stop();
    slot.follower = followLog(logFile, started.logOffset, (line) => log({ fleet, source: 'proxy', line }));
    const { pid } = started.process;
    watch(slot, started.process);
    if (pid > 0 && options.recordsDir !== undefined) {
      const record: ProxyRecord = {
        fleet,
        address: slot.spec.address,
        pid,
        argv,
        args: [...slot.spec.args],
        logFile,
      };
      const startTime = processStartTime(pid);
      if (startTime !== undefined) record.startTime = startTime;
      recordSafely(record);
    }
    void started.spawned.then(() => {
      if (slot.process === started.process && slot.state === 'starting') setState(slot, 'running');
    });
    setState(slot, 'starting');
  }

  function recordSafely(record: ProxyRecord): void {
    try {
      writeProxyRecord(options.recordsDir!, record);
    } catch (error) {
      say(
        record.fleet,
        `cannot record the proxy process (a restarted controller will not adopt it): ${String(error)}`,
      );
    }
  }

  function exitedProcess(
    slot: Slot,
    watched: WatchedProcess,
    code: number | null,
    signal: string | null,
  ): void {
    if (slot.process !== watched || detached) return;
    clearTimeout(slot.killTimer);
    slot.process = undefined;
    slot.lastExit = { code, signal, at: new Date().toISOString() };
    if (options.recordsDir !== undefined) removeProxyRecord(options.recordsDir, slot.spec.fleet);
    if (!slot.wanted) {
      slot.follower?.stop();
      slot.follower = undefined;
      slots.delete(slot.spec.fleet);
      options.onChange?.();
      return;
    }
    if (slot.stopRequested) {
      // Stopped on purpose (a new command line, or not live): start again at once.
      slot.restarts++;
      start(slot);
      return;
    }
    if (Date.now() - slot.startedAt >= settings.stableAfterMs) slot.failures = 0;
    slot.failures++;
    const delay = backoffDelay(slot.failures, settings.backoffInitialMs, settings.backoffMaxMs);
    const how = watched.adopted ? 'exit status unknown' : (signal ?? `code ${code}`);
    say(slot.spec.fleet, `proxy exited (${how}); restarting in ${delay} ms`);
    setState(slot, 'backoff');
    slot.backoffTimer = setTimeout(() => {
      slot.backoffTimer = undefined;
      slot.restarts++;
      start(slot);
    }, delay);
    if (!watched.adopted && code === EXIT_ADDRESS_IN_USE)
      options.onAddressInUse?.(slot.spec.fleet, slot.spec.address);
  }

  function stop(slot: Slot): void {
    clearTimeout(slot.backoffTimer);
    slot.backoffTimer = undefined;
    const watched = slot.process;
    if (watched === undefined) {
      if (!slot.wanted) {
        slot.follower?.stop();
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
    watched.kill('SIGTERM');
    slot.killTimer = setTimeout(() => watched.kill('SIGKILL'), settings.stopGraceMs);
  }

  function setHealth(slot: Slot, health: ProxyHealth, error: string | undefined): void {
    const changed = slot.health !== health || slot.healthError !== error;
    slot.health = health;
    if (error === undefined) delete slot.healthError;
    else slot.healthError = error;
    if (changed) options.onChange?.();
  }

  async function probe(slot: Slot): Promise<void> {
    const target = slot.spec.liveness;
    const watched = slot.process;
    if (target === undefined || watched === undefined || slot.state !== 'running' || slot.probing) return;
    slot.probing = true;
    const problem = await probeLiveness(target, settings.probeTimeoutMs);
    slot.probing = false;
    // The process may have been replaced or asked to stop while the probe was out.
    if (slot.process !== watched || slot.state !== 'running' || slot.stopRequested || detached) return;
    if (problem === undefined) {
      slot.answered = true;
      slot.probeFailures = 0;
      setHealth(slot, 'live', undefined);
      return;
    }
    const starting = !slot.answered && Date.now() - slot.startedAt < settings.probeStartupGraceMs;
    if (starting) return;
    slot.probeFailures++;
    setHealth(slot, 'failing', problem);
    if (slot.probeFailures < settings.probeFailureThreshold) return;
    say(
      slot.spec.fleet,
      `proxy failed ${slot.probeFailures} liveness probes in a row (${problem}); restarting it`,
    );
    // Hung or drained: there is nothing left to drain, and a stopped process ignores SIGTERM.
    slot.stopRequested = true;
    setState(slot, 'stopping');
    watched.kill('SIGKILL');
  }

  const probeTimer = setInterval(() => {
    for (const slot of slots.values()) void probe(slot);
  }, settings.probeIntervalMs);
  probeTimer.unref();

  function newSlot(spec: ProxySpec): Slot {
    return {
      spec,
      launcher,
      wanted: true,
      state: 'starting',
      stopRequested: false,
      restarts: 0,
      failures: 0,
      startedAt: Date.now(),
      health: 'unknown',
      probeFailures: 0,
      answered: false,
      probing: false,
    };
  }

  return {
    adopt(records) {
      for (const record of records) {
        if (slots.has(record.fleet)) continue;
        const slot = newSlot({ fleet: record.fleet, address: record.address, args: [...record.args] });
        slot.launcher = record.argv.slice(0, record.argv.length - record.args.length);
        slot.state = 'running';
        slots.set(record.fleet, slot);
        watch(slot, watchAdopted(record));
        // Only what it writes from now on: earlier lines were shown by the supervisor that started it.
        let offset = 0;
        try {
          offset = statSync(record.logFile).size;
        } catch {
          // No log file any more: it is followed from the start once the proxy writes again.
        }
        slot.follower = followLog(record.logFile, offset, (line) =>
          log({ fleet: record.fleet, source: 'proxy', line }),
        );
        // Another build may not know the signal (its default ends the process); it is replaced on sync anyway.
        if (sameList(slot.launcher, launcher)) slot.process?.kill('SIGHUP');
      }
      options.onChange?.();
    },
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
          const fresh = newSlot(spec);
          slots.set(spec.fleet, fresh);
          start(fresh);
          continue;
        }
        // A changed command line, or a process another build of Portico started, is replaced.
        const changed = !sameSpec(slot.spec, spec) || !sameList(slot.launcher, launcher);
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
      clearInterval(probeTimer);
      const waits: Promise<void>[] = [];
      for (const slot of [...slots.values()]) {
        slot.wanted = false;
        if (slot.process !== undefined && slot.exited !== undefined) waits.push(slot.exited);
        stop(slot);
      }
      await Promise.all(waits);
    },
    detach() {
      shuttingDown = true;
      detached = true;
      clearInterval(probeTimer);
      for (const slot of slots.values()) {
        clearTimeout(slot.backoffTimer);
        clearTimeout(slot.killTimer);
        slot.follower?.stop();
        slot.process?.release();
      }
      slots.clear();
    },
  };
}

function sameSpec(a: ProxySpec, b: ProxySpec): boolean {
  return a.address === b.address && sameList(a.args, b.args);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

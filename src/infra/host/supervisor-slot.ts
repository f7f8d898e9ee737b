// One fleet's process slot of the proxy supervisor: starting, watching, restarting with backoff, stopping and
// probing its process. The supervisor (supervisor.ts) owns the slots and decides which fleets have one.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fleetInfraName } from '../../ir/fleet-infra.js';
import { proxySettingsFlags } from '../../ir/proxy-flags.js';
import { type ProxySettings, sameProxySettings } from '../../ir/proxy-settings.js';
import { backoffDelay } from '../../platform/backoff.js';
import { EXIT_ADDRESS_IN_USE } from '../../platform/errors.js';
import { probeLiveness } from './liveness-probe.js';
import { followLog, type LogFollower } from './log-follower.js';
import { processStartTime } from './process-identity.js';
import { type ProxyRecord, removeProxyRecord, writeProxyRecord } from './proxy-records.js';
import { putProxySettings, takenSettings } from './settings-request.js';
import type {
  ProxyExit,
  ProxyHealth,
  ProxyLogLine,
  ProxyProcessInfo,
  ProxyProcessState,
  ProxySpec,
  ProxySupervisorOptions,
  SUPERVISOR_DEFAULTS,
} from './supervisor-types.js';
import { spawnDetached, type WatchedProcess, watchAdopted } from './watched-process.js';

export interface SupervisorContext {
  options: ProxySupervisorOptions;
  settings: { [K in keyof typeof SUPERVISOR_DEFAULTS]: number };
  /** The command line before a spec's args, for processes this supervisor starts. */
  launcher: readonly string[];
  log: (line: ProxyLogLine) => void;
  slots: Map<string, Slot>;
  /** Set once the supervisor let go of its processes: what happens to them is no longer its business. */
  detached: boolean;
}

/** The log file of a fleet's proxy. */
export function proxyLogFile(logDir: string, fleet: string): string {
  return join(logDir, `${fleetInfraName(fleet)}.log`);
}

/** Where a host proxy's stdout goes: its access log, one line per request, kept apart from its own log. */
export function proxyAccessLogFile(logDir: string, fleet: string): string {
  return join(logDir, `${fleetInfraName(fleet)}.access.log`);
}

function say(ctx: SupervisorContext, fleet: string, line: string): void {
  ctx.log({ fleet, source: 'supervisor', line });
}

export interface Slot {
  spec: ProxySpec;
  /** The command line before the spec's args; an adopted process started by another build differs. */
  launcher: readonly string[];
  /** The running process's `--max-drain-seconds` (a spec that replaces it may say less). */
  drainSeconds?: number;
  /** The settings the running process has (what it started with, or last took in place). */
  settings?: ProxySettings;
  /** A settings change is being sent: another waits for it, then sends the newest. */
  reconfiguring: boolean;
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
  /** What is recorded for the current process, rewritten when its settings change. */
  record?: ProxyRecord;
}

/** What `list()` shows of a slot. */
export function processInfo(slot: Slot): ProxyProcessInfo {
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

function setState(ctx: SupervisorContext, slot: Slot, state: ProxyProcessState): void {
  slot.state = state;
  ctx.options.onChange?.();
}

function resetHealth(slot: Slot): void {
  slot.health = 'unknown';
  slot.probeFailures = 0;
  slot.answered = false;
  delete slot.healthError;
}

function watch(ctx: SupervisorContext, slot: Slot, watched: WatchedProcess): void {
  slot.process = watched;
  slot.exited = watched.exited.then(({ code, signal }) => exitedProcess(ctx, slot, watched, code, signal));
}

export function start(ctx: SupervisorContext, slot: Slot): void {
  slot.stopRequested = false;
  slot.startedAt = Date.now();
  resetHealth(slot);
  const { fleet } = slot.spec;
  slot.launcher = ctx.launcher;
  const { settings } = slot.spec;
  slot.settings = settings;
  slot.drainSeconds = settings?.maxDrainSeconds ?? maxDrainSecondsOf(slot.spec.args);
  const argv = [
    ...ctx.launcher,
    ...slot.spec.args,
    ...(settings === undefined ? [] : proxySettingsFlags(settings)),
  ];
  const logFile = proxyLogFile(ctx.options.logDir, fleet);
  const started = spawnDetached(argv, {
    env: { ...process.env, ...ctx.options.env },
    logFile,
    stdoutFile: proxyAccessLogFile(ctx.options.logDir, fleet),
    maxLogBytes: ctx.settings.maxLogBytes,
    onError: (message) => say(ctx, fleet, message),
  });
  slot.follower?.stop();
  slot.follower = followLog(logFile, started.logOffset, (line) => ctx.log({ fleet, source: 'proxy', line }));
  const { pid } = started.process;
  watch(ctx, slot, started.process);
  if (pid > 0 && ctx.options.recordsDir !== undefined) {
    const record: ProxyRecord = {
      fleet,
      address: slot.spec.address,
      pid,
      argv,
      launcher: [...ctx.launcher],
      args: [...slot.spec.args],
      logFile,
    };
    if (settings !== undefined) record.settings = settings;
    const startTime = processStartTime(pid);
    if (startTime !== undefined) record.startTime = startTime;
    slot.record = record;
    recordSafely(ctx, record);
  }
  void started.spawned.then(() => {
    if (slot.process === started.process && slot.state === 'starting') setState(ctx, slot, 'running');
  });
  setState(ctx, slot, 'starting');
}

function recordSafely(ctx: SupervisorContext, record: ProxyRecord): void {
  try {
    writeProxyRecord(ctx.options.recordsDir!, record);
  } catch (error) {
    say(
      ctx,
      record.fleet,
      `cannot record the proxy process (a restarted controller will not adopt it): ${String(error)}`,
    );
  }
}

function exitedProcess(
  ctx: SupervisorContext,
  slot: Slot,
  watched: WatchedProcess,
  code: number | null,
  signal: string | null,
): void {
  if (slot.process !== watched || ctx.detached) return;
  clearTimeout(slot.killTimer);
  slot.process = undefined;
  slot.lastExit = { code, signal, at: new Date().toISOString() };
  if (ctx.options.recordsDir !== undefined) removeProxyRecord(ctx.options.recordsDir, slot.spec.fleet);
  if (!slot.wanted) {
    slot.follower?.stop();
    slot.follower = undefined;
    ctx.slots.delete(slot.spec.fleet);
    ctx.options.onChange?.();
    return;
  }
  if (slot.stopRequested) {
    // Stopped on purpose (a new command line, or not live): start again at once.
    slot.restarts++;
    start(ctx, slot);
    return;
  }
  if (Date.now() - slot.startedAt >= ctx.settings.stableAfterMs) slot.failures = 0;
  slot.failures++;
  // Restart number `failures` (1-based) of a crash loop.
  const delay = backoffDelay(slot.failures, {
    firstMs: ctx.settings.backoffInitialMs,
    maxMs: ctx.settings.backoffMaxMs,
  });
  const how = watched.adopted ? 'exit status unknown' : (signal ?? `code ${code}`);
  say(ctx, slot.spec.fleet, `proxy exited (${how}); restarting in ${delay} ms`);
  setState(ctx, slot, 'backoff');
  slot.backoffTimer = setTimeout(() => {
    slot.backoffTimer = undefined;
    slot.restarts++;
    start(ctx, slot);
  }, delay);
  if (!watched.adopted && code === EXIT_ADDRESS_IN_USE)
    ctx.options.onAddressInUse?.(slot.spec.fleet, slot.spec.address);
}

export function stop(ctx: SupervisorContext, slot: Slot): void {
  clearTimeout(slot.backoffTimer);
  slot.backoffTimer = undefined;
  const watched = slot.process;
  if (watched === undefined) {
    if (!slot.wanted) {
      slot.follower?.stop();
      ctx.slots.delete(slot.spec.fleet);
      ctx.options.onChange?.();
      return;
    }
    slot.restarts++;
    start(ctx, slot);
    return;
  }
  if (slot.stopRequested) return; // already draining
  slot.stopRequested = true;
  setState(ctx, slot, 'stopping');
  watched.kill('SIGTERM');
  // A proxy whose drain is longer than the stop grace still gets all of it, and 5 s to exit.
  const graceMs = Math.max(ctx.settings.stopGraceMs, ((slot.drainSeconds ?? 0) + 5) * 1000);
  slot.killTimer = setTimeout(() => watched.kill('SIGKILL'), graceMs);
}

function setHealth(ctx: SupervisorContext, slot: Slot, health: ProxyHealth, error: string | undefined): void {
  const changed = slot.health !== health || slot.healthError !== error;
  slot.health = health;
  if (error === undefined) delete slot.healthError;
  else slot.healthError = error;
  if (changed) ctx.options.onChange?.();
}

export async function probe(ctx: SupervisorContext, slot: Slot): Promise<void> {
  const target = slot.spec.liveness;
  const watched = slot.process;
  if (target === undefined || watched === undefined || slot.state !== 'running' || slot.probing) return;
  slot.probing = true;
  const problem = await probeLiveness(target, ctx.settings.probeTimeoutMs);
  slot.probing = false;
  // The process may have been replaced or asked to stop while the probe was out.
  if (slot.process !== watched || slot.state !== 'running' || slot.stopRequested || ctx.detached) return;
  if (problem === undefined) {
    const first = !slot.answered;
    slot.answered = true;
    slot.probeFailures = 0;
    setHealth(ctx, slot, 'live', undefined);
    // Settings that changed while it was starting are sent now that it answers.
    if (first) void reconfigure(ctx, slot);
    else void restoreSettings(ctx, slot);
    return;
  }
  const starting = !slot.answered && Date.now() - slot.startedAt < ctx.settings.probeStartupGraceMs;
  if (starting) return;
  slot.probeFailures++;
  setHealth(ctx, slot, 'failing', problem);
  if (slot.probeFailures < ctx.settings.probeFailureThreshold) return;
  say(
    ctx,
    slot.spec.fleet,
    `proxy failed ${slot.probeFailures} liveness probes in a row (${problem}); restarting it`,
  );
  // Hung or drained: there is nothing left to drain, and a stopped process ignores SIGTERM.
  slot.stopRequested = true;
  setState(ctx, slot, 'stopping');
  watched.kill('SIGKILL');
}

export function newSlot(ctx: SupervisorContext, spec: ProxySpec): Slot {
  return {
    spec,
    launcher: ctx.launcher,
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
    reconfiguring: false,
  };
}

/** Takes over a process a previous supervisor started and recorded. */
export function adoptRecord(ctx: SupervisorContext, record: ProxyRecord): void {
  const spec: ProxySpec = { fleet: record.fleet, address: record.address, args: [...record.args] };
  if (record.settings !== undefined) spec.settings = record.settings;
  const slot = newSlot(ctx, spec);
  // A record from before settings were kept apart has its flags in `args` and no launcher of its own.
  slot.launcher = record.launcher ?? record.argv.slice(0, record.argv.length - record.args.length);
  slot.settings = record.settings;
  slot.drainSeconds = record.settings?.maxDrainSeconds ?? maxDrainSecondsOf(record.args);
  slot.record = record;
  slot.state = 'running';
  ctx.slots.set(record.fleet, slot);
  watch(ctx, slot, watchAdopted(record));
  // Only what it writes from now on: earlier lines were shown by the supervisor that started it.
  let offset = 0;
  try {
    offset = statSync(record.logFile).size;
  } catch {
    // No log file any more: it is followed from the start once the proxy writes again.
  }
  slot.follower = followLog(record.logFile, offset, (line) =>
    ctx.log({ fleet: record.fleet, source: 'proxy', line }),
  );
  // Another build may not know the signal (its default ends the process); it is replaced on sync anyway.
  if (sameList(slot.launcher, ctx.launcher)) slot.process?.kill('SIGHUP');
}

/**
 * Sends the running process the settings its spec now has, until they agree; a process that refuses them (it
 * serves in its own process and more workers are asked for) or cannot be asked is restarted with them. One that
 * has not answered a probe yet is asked once it does; one not running starts with them anyway.
 */
export async function reconfigure(ctx: SupervisorContext, slot: Slot): Promise<void> {
  if (slot.reconfiguring) return;
  slot.reconfiguring = true;
  try {
    for (;;) {
      const wanted = slot.spec.settings;
      const watched = slot.process;
      if (wanted === undefined || sameProxySettings(slot.settings, wanted)) return;
      if (watched === undefined || slot.state !== 'running' || slot.stopRequested || ctx.detached) return;
      // A probed process is asked once it answers a probe (else it may still be starting).
      if (!slot.answered && slot.spec.liveness !== undefined) return;
      const admin = slot.spec.admin;
      const problem =
        admin === undefined ? 'it has no admin API to ask' : await putProxySettings(admin, wanted);
      if (slot.process !== watched || slot.stopRequested || ctx.detached) return;
      if (problem !== undefined) {
        say(
          ctx,
          slot.spec.fleet,
          `cannot change its settings in place (${problem}); restarting it with them`,
        );
        stop(ctx, slot);
        return;
      }
      slot.settings = wanted;
      slot.drainSeconds = wanted.maxDrainSeconds;
      if (slot.record !== undefined && ctx.options.recordsDir !== undefined) {
        slot.record = { ...slot.record, settings: wanted };
        recordSafely(ctx, slot.record);
      }
      ctx.options.onChange?.();
    }
  } finally {
    slot.reconfiguring = false;
  }
}

/**
 * Puts the supervisor's settings back when the process shows others (anything on its loopback can PUT
 * /settings: the access log off, spans sent elsewhere): what it took last is read after each good probe.
 */
async function restoreSettings(ctx: SupervisorContext, slot: Slot): Promise<void> {
  const admin = slot.spec.admin;
  const watched = slot.process;
  if (admin === undefined || slot.reconfiguring || slot.settings === undefined) return;
  const taken = await takenSettings(admin, ctx.settings.probeTimeoutMs);
  if (slot.process !== watched || slot.reconfiguring || slot.stopRequested || ctx.detached) return;
  if (taken === undefined || sameProxySettings(taken, slot.settings)) return;
  say(
    ctx,
    slot.spec.fleet,
    'its settings were changed by someone else through its admin API; restoring them',
  );
  slot.settings = taken;
  await reconfigure(ctx, slot);
}

/** The `--max-drain-seconds` a proxy was started with, when given. */
function maxDrainSecondsOf(args: readonly string[]): number | undefined {
  const at = args.indexOf('--max-drain-seconds');
  const value = at < 0 ? Number.NaN : Number(args[at + 1]);
  return Number.isFinite(value) ? value : undefined;
}

export function sameSpec(a: ProxySpec, b: ProxySpec): boolean {
  return a.address === b.address && sameList(a.args, b.args);
}

export function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

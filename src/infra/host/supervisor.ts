// Keeps one `portico proxy` process per fleet: starts missing ones, restarts crashed ones with capped
// exponential backoff, drains removed ones (SIGTERM, then SIGKILL after a grace period), restarts one whose
// command line changed, and restarts one that stops answering its liveness probe (hung, or drained without
// being asked to). The standalone controller's host infrastructure, as Deployments and kubelet are in a cluster.
//
// Proxies outlive the supervisor: each runs in its own session (no terminal signal reaches it), writes to its own
// log file (no pipe to break), and is recorded under the records directory. `detach()` lets go of them; a later
// supervisor `adopt()`s the records whose process is still the one that was started.
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ProxySettings } from '../../ir/proxy-settings.js';
import { PorticoError } from '../../platform/errors.js';
import type { ProbeTarget } from './liveness-probe.js';
import type { ProxyRecord } from './proxy-records.js';
import {
  adoptRecord,
  newSlot,
  probe,
  processInfo,
  proxyAccessLogFile,
  reconfigure,
  type SupervisorContext,
  sameList,
  sameSpec,
  start,
  stop,
} from './supervisor-slot.js';
import { trimLog } from './watched-process.js';

export { proxyAccessLogFile, proxyLogFile } from './supervisor-slot.js';

export interface ProxySpec {
  fleet: string;
  /** The loopback address the proxy binds (also passed in `args` as `--bind-address`). */
  address: string;
  /** The command line after `portico`, e.g. `['proxy', '--fleet', 'default/eg', ...]`: a change restarts it. */
  args: readonly string[];
  /**
   * What the proxy may change while it runs: flags after `args` at a start, later sent to its admin API, so a
   * change restarts nothing (unless the proxy refuses it or cannot be asked). Absent: the proxy's defaults.
   */
  settings?: ProxySettings;
  /** Where the process answers whether it still serves (`GET /live`); absent: not probed. */
  liveness?: ProbeTarget;
  /** The proxy's admin API, which takes new settings; absent: a settings change restarts the process. */
  admin?: { host: string; port: number };
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
  /** Every line a proxy logs, and every event: the caller's to show (`formatProxyLogLine`) or keep. */
  log: (line: ProxyLogLine) => void;
  /** Called whenever a process starts, runs, exits, backs off or goes away: read `list()` again. */
  onChange?: () => void;
  /** A process exited because its address is in use (exit status 98): sync it with another address. */
  onAddressInUse?: (fleet: string, address: string) => void;
  /** First restart delay after a crash; doubles per consecutive crash up to `backoffMaxMs`. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** A process that ran this long before crashing starts the backoff over. */
  stableAfterMs?: number;
  /** Time between SIGTERM and SIGKILL; longer than the proxy's default drain (60 s); a longer drain gets +5 s. */
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

export function formatProxyLogLine({ fleet, line }: ProxyLogLine): string {
  return `[${fleet}] ${line}`;
}

function supervisorSettings(options: ProxySupervisorOptions): SupervisorContext['settings'] {
  return {
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
}

/** Starts the fleets without a process, stops those no longer desired, replaces changed command lines. */
function syncSlots(ctx: SupervisorContext, desired: readonly ProxySpec[]): void {
  const { slots, launcher } = ctx;
  const byFleet = new Map<string, ProxySpec>();
  for (const spec of desired) {
    if (byFleet.has(spec.fleet)) {
      throw new PorticoError('E_CONFIG', `proxy supervisor: fleet '${spec.fleet}' is listed twice`);
    }
    byFleet.set(spec.fleet, { ...spec, args: [...spec.args] });
  }
  for (const slot of slots.values()) {
    if (byFleet.has(slot.spec.fleet)) continue;
    slot.wanted = false;
    stop(ctx, slot);
  }
  for (const spec of byFleet.values()) {
    const slot = slots.get(spec.fleet);
    if (slot === undefined) {
      const fresh = newSlot(ctx, spec);
      slots.set(spec.fleet, fresh);
      start(ctx, fresh);
      continue;
    }
    // A changed command line, or a process another build of Portico started, is replaced; changed settings
    // are sent to the process.
    const changed = !sameSpec(slot.spec, spec) || !sameList(slot.launcher, launcher);
    slot.spec = spec;
    slot.wanted = true;
    if (changed) {
      slot.failures = 0;
      if (slot.state !== 'stopping') stop(ctx, slot);
    } else void reconfigure(ctx, slot);
  }
}

export function createProxySupervisor(options: ProxySupervisorOptions): ProxySupervisor {
  const settings = supervisorSettings(options);
  const entryPoint = options.entryPoint ?? DEFAULT_ENTRY_POINT;
  const launcher = [options.execPath ?? process.execPath, ...(options.execArgv ?? []), entryPoint];
  const ctx: SupervisorContext = {
    options,
    settings,
    launcher,
    log: options.log,
    slots: new Map(),
    detached: false,
  };
  const { slots } = ctx;
  let shuttingDown = false;
  mkdirSync(options.logDir, { recursive: true, mode: 0o700 });

  const probeTimer = setInterval(() => {
    for (const slot of slots.values()) {
      void probe(ctx, slot);
      // A busy proxy's access log grows between restarts; its own log is only trimmed when it starts.
      trimLog(proxyAccessLogFile(options.logDir, slot.spec.fleet), settings.maxLogBytes);
    }
  }, settings.probeIntervalMs);
  probeTimer.unref();

  return {
    adopt(records) {
      for (const record of records) if (!slots.has(record.fleet)) adoptRecord(ctx, record);
      options.onChange?.();
    },
    sync(desired) {
      if (shuttingDown) throw new PorticoError('E_CONFIG', 'the proxy supervisor is shutting down');
      syncSlots(ctx, desired);
    },
    list() {
      return [...slots.values()]
        .map(processInfo)
        .sort((a, b) => (a.fleet < b.fleet ? -1 : a.fleet > b.fleet ? 1 : 0));
    },
    async stopAll() {
      shuttingDown = true;
      clearInterval(probeTimer);
      const waits: Promise<void>[] = [];
      for (const slot of [...slots.values()]) {
        slot.wanted = false;
        if (slot.process !== undefined && slot.exited !== undefined) waits.push(slot.exited);
        stop(ctx, slot);
      }
      await Promise.all(waits);
    },
    detach() {
      shuttingDown = true;
      ctx.detached = true;
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

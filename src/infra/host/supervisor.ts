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
import { PorticoError } from '../../platform/errors.js';
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
import {
  type ProxyLogLine,
  type ProxySpec,
  type ProxySupervisor,
  type ProxySupervisorOptions,
  SUPERVISOR_DEFAULTS,
} from './supervisor-types.js';
import { trimLog } from './watched-process.js';

export { proxyAccessLogFile, proxyLogFile } from './supervisor-slot.js';
export * from './supervisor-types.js';

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

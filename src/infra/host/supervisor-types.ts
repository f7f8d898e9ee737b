// The supervisor's vocabulary: what a proxy is asked to be (its spec), what the supervisor reports of it, its
// options and their defaults. Apart from supervisor.ts so that the per-proxy logic (supervisor-slot.ts) can use
// them without importing the supervisor that uses it.
import type { ProxySettings } from '../../ir/proxy-settings.js';
import type { ProbeTarget } from './liveness-probe.js';
import type { ProxyRecord } from './proxy-records.js';

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

// The messages between a proxy's primary process and its workers (node:cluster IPC, structured clone).

import type { ApplyOutcome } from '../../ir/apply-outcome.js';
import type { FleetConfig } from '../../ir/fleet-config.js';
import type { FleetConfigDelta } from '../../ir/fleet-config-patch.js';
import type { LogLevel } from '../../platform/log-line.js';
import type { Grant, RateRuleShape } from '../limits/rate-store.js';
import type { ReconfigureOutcome, RuntimeSettings } from '../live-settings.js';
import type { Http2Limits, ProxyLimits } from '../options.js';
import type { AccessLogOptions } from '../telemetry/access-log.js';
import type { MetricsSnapshot } from '../telemetry/metrics.js';
import type { TracingOptions } from '../telemetry/span-exporter.js';

/** How connections reach workers: the kernel spreads them (SO_REUSEPORT), or the primary hands them out. */
export type AcceptBalancing = 'reuse-port' | 'round-robin';

/** What a worker needs besides the config: the primary's options that can cross a process boundary. */
export interface WorkerSettings {
  bindAddress: string;
  /** The primary's HTTP/1.1 and HTTP/2 limits, so a worker's listeners are bounded as one proxy's would be. */
  limits: ProxyLimits;
  http2: Http2Limits;
  portOffset: number;
  drainMs: number;
  maxDrainMs: number;
  balancing: AcceptBalancing;
  /** The primary's choice of layer-4 relay (ProxyOptions.layer4Relay). */
  layer4Relay: 'native' | 'node';
  /** Each worker writes its own requests' lines; absent: off. */
  accessLog?: Omit<AccessLogOptions, 'write'>;
  /** The file a worker appends its stage timestamps to (diagnostics: `--trace-events`). */
  traceEvents?: string;
  tracing?: TracingOptions;
}

export type ToWorker =
  | {
      type: 'apply';
      id: number;
      version: string | undefined;
      /** A whole config (a new worker, or one whose last apply failed), else what changed since the last. */
      full?: FleetConfig;
      delta?: FleetConfigDelta;
    }
  | { type: 'stats'; id: number }
  /** The primary's new settings, for the worker's own access log and tracing (its `workers` is 1). */
  | { type: 'settings'; id: number; settings: RuntimeSettings }
  | { type: 'drain'; drainMs: number; maxMs: number }
  /** The answer to a worker's lease of Local rate-limit tokens (primary-rate-store.ts). */
  | { type: 'leased'; lease: number; grant: Grant };

export interface WorkerStats {
  metrics: MetricsSnapshot;
  /** Why this worker cannot serve (a listener stopped listening), if it cannot. */
  notLive: string | undefined;
}

export type FromWorker =
  | { type: 'started' }
  | {
      type: 'applied';
      id: number;
      outcome: ApplyOutcome;
      addresses: { listener: string; port: number; address: string }[];
    }
  | { type: 'stats'; id: number; stats: WorkerStats }
  | { type: 'reconfigured'; id: number; outcome: ReconfigureOutcome }
  /** A line of the worker's log, for the primary's logger to show or drop. */
  | { type: 'log'; level: LogLevel; line: string }
  /** Its counts once its last request finished: a worker retired while the proxy serves keeps them counted. */
  | { type: 'drained'; metrics: MetricsSnapshot }
  /** Up to `want` Local rate-limit tokens of (rule, key) from the primary's buckets. */
  | { type: 'lease'; lease: number; rule: RateRuleShape; key: string; want: number };

// The controller's Prometheus metrics (text format 0.0.4): counters, gauges and a translation-time summary.
import { buildInfoMetric } from '../../platform/build-info.js';
import { family, type LabelPairs, type MetricType } from '../../platform/prometheus-text.js';
import { createRunnerMetrics, type RunnerMetrics } from '../../runner/metrics.js';
/** The runner's counters, and what only the Kubernetes controller has: status writes, applies, leadership. */
export interface ControllerMetrics extends RunnerMetrics {
  statusWrites: number;
  infraApplies: number;
  leader: boolean;
  /** The rate limit status writes wait for, and how they waited. */
  statusWriteRate?: {
    limit: { perSecond: number; burst: number };
    waitedSeconds(): number;
    waiting(): number;
  };
}

export function createMetrics(): ControllerMetrics {
  return { ...createRunnerMetrics(), statusWrites: 0, infraApplies: 0, leader: false };
}

/** What the process itself uses, as Prometheus' process collector names it: operators size the controller by it. */
export interface ProcessSample {
  residentBytes: number;
  heapUsedBytes: number;
  cpuSeconds: number;
}

export function processSample(): ProcessSample {
  const memory = process.memoryUsage();
  const cpu = process.cpuUsage();
  return {
    residentBytes: memory.rss,
    heapUsedBytes: memory.heapUsed,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
}

export function formatMetrics(m: ControllerMetrics, own: ProcessSample = processSample()): string {
  const lines: string[] = [];
  const metric = (
    name: string,
    type: MetricType,
    help: string,
    samples: (readonly [LabelPairs | undefined, number])[],
  ): void => {
    lines.push(...family(name, type, help, samples));
  };
  metric('portico_reconciles_total', 'counter', 'Reconcile passes.', [[undefined, m.reconciles]]);
  metric('portico_reconcile_errors_total', 'counter', 'Reconcile passes that failed.', [
    [undefined, m.reconcileErrors],
  ]);
  metric('portico_translate_seconds', 'summary', 'Time spent translating resources.', []);
  lines.push(
    `portico_translate_seconds_sum ${m.translateSecondsSum}`,
    `portico_translate_seconds_count ${m.reconciles}`,
  );
  metric(
    'portico_translations_total',
    'counter',
    'Translations by path: full, by the changed routes alone, or the statuses again (same resources).',
    [
      [{ path: 'full' }, m.translations.full],
      [{ path: 'changed_routes' }, m.translations.changedRoutes],
      [{ path: 'again' }, m.translations.again],
    ],
  );
  metric('portico_status_writes_total', 'counter', 'Status subresource writes.', [
    [undefined, m.statusWrites],
  ]);
  metric('portico_infra_applies_total', 'counter', 'Infrastructure apply passes that changed objects.', [
    [undefined, m.infraApplies],
  ]);
  metric('portico_connected_proxies', 'gauge', 'Proxies connected to config discovery.', [
    [undefined, m.connectedProxies],
  ]);
  metric(
    'portico_fleet_config_version',
    'gauge',
    'Config version served per fleet.',
    [...m.configVersions].map(([fleet, v]) => [{ fleet }, v] as const),
  );
  metric('portico_leader', 'gauge', '1 while this replica holds the leader lease.', [
    [undefined, m.leader ? 1 : 0],
  ]);
  const rate = m.statusWriteRate;
  if (rate !== undefined) {
    metric(
      'portico_status_write_limit',
      'gauge',
      'Client side rate limit of status writes: per second, and at once.',
      [
        [{ limit: 'qps' }, rate.limit.perSecond],
        [{ limit: 'burst' }, rate.limit.burst],
      ],
    );
    metric(
      'portico_status_write_wait_seconds_total',
      'counter',
      'Time status write requests waited for the rate limit.',
      [[undefined, rate.waitedSeconds()]],
    );
    metric(
      'portico_status_write_requests_waiting',
      'gauge',
      'Status write requests waiting for the rate limit now.',
      [[undefined, rate.waiting()]],
    );
  }
  metric('process_resident_memory_bytes', 'gauge', 'Resident memory of the controller process.', [
    [undefined, own.residentBytes],
  ]);
  metric('nodejs_heap_size_used_bytes', 'gauge', 'V8 heap in use.', [[undefined, own.heapUsedBytes]]);
  metric('process_cpu_seconds_total', 'counter', 'User and system CPU time of the process.', [
    [undefined, own.cpuSeconds],
  ]);
  lines.push(buildInfoMetric());
  return `${lines.join('\n')}\n`;
}

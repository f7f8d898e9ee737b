// The controller core both providers run: one reconcile pass is snapshot → data plane state → translate →
// publish to discovery → infrastructure → statuses; the schedule decides when passes run and retries them.
import { performance } from 'node:perf_hooks';
import type { ResourceSnapshot } from '../api/snapshot.js';
import type { FleetConfig } from '../ir/fleet-config.js';
import {
  createTranslateCache,
  type DataPlaneState,
  type ObjectStatus,
  type TranslateOptions,
  type TranslateResult,
  translate,
} from '../translate/index.js';
import { type ConditionChange, conditionChanges } from './condition-changes.js';
import { type InfraProblem, withInfraProblems } from './infra-problems.js';
import { createRunnerMetrics, type RunnerMetrics } from './metrics.js';
import { createPublishedFleets, type FleetPublisher } from './publish.js';
import { createSchedule, type Schedule, type ScheduleTimings } from './schedule.js';
import { createStatusStamper, type ShownObject, type StampedStatus } from './status-stamps.js';

export const RUNNER_DEFAULTS: ScheduleTimings = {
  settleMs: 100,
  retryFirstMs: 2000,
  retryMaxMs: 30_000,
};

/** Where a provider's resources come from. */
export interface ResourceSource {
  /** The resources now, as one immutable snapshot (unchanged lists kept, so the translate cache hits). */
  snapshot(): ResourceSnapshot;
  /** What the proxies of `fleets` (the last published) report, and each fleet's addresses. */
  dataPlane(fleets: readonly FleetConfig[], snapshot: ResourceSnapshot): DataPlaneState;
}

export interface InfraOutcome {
  /** fleet → why its infrastructure could not be created: its Gateways are not Programmed, and say why. */
  problems?: ReadonlyMap<string, InfraProblem>;
  /** The provider learnt a data plane fact this translation did not know (an address assigned): run again. */
  learnt?: boolean;
}

/** Makes the translated infrastructure exist (Kubernetes objects, host processes). */
export interface InfraApplier {
  apply(result: TranslateResult, dataPlane: DataPlaneState): Promise<InfraOutcome>;
}

/** Where statuses go (the status subresource, the admin view). */
export interface StatusSink {
  /** The object as the sink shows it now, its times carried over; absent: the runner's last stamped status. */
  shown?(status: ObjectStatus): ShownObject | undefined;
  /** Every status of the pass, stamped, in translation order. */
  show(statuses: readonly StampedStatus[]): void | Promise<void>;
  /**
   * Only what changed since the statuses last shown (or shown changed): the changed ones stamped, and the objects
   * that have no status any more. Absent: the sink is always shown everything.
   */
  showChanged?(changed: readonly StampedStatus[], removed: readonly ObjectStatus[]): void | Promise<void>;
  /** True when the sink must be shown everything next (it forgot what it was shown: a new leader). */
  wantsAll?(): boolean;
}

export interface RunnerOptions {
  translate: Omit<TranslateOptions, 'cache'>;
  source: ResourceSource;
  discovery: FleetPublisher;
  infra: InfraApplier;
  statuses: StatusSink;
  /** Whether infrastructure and statuses are this controller's to apply now (Kubernetes: while leading). */
  applies?: () => boolean;
  metrics?: RunnerMetrics;
  timings?: Partial<ScheduleTimings>;
  /** A pass failed; the next runs in `retryInMs` (or sooner, on news). */
  onError(error: unknown, retryInMs: number): void;
  /** Every translation, before anything is published. */
  onTranslated?(result: TranslateResult, pass: { number: number; seconds: number }): void;
  /** Marks the start of a pass (pass) and the end of each stage (snapshot, translated, discovery-sent, statuses). */
  trace?(stage: string): void;
  /** Conditions a pass turned False or back True (condition-changes.ts), one line each, before they are shown. */
  onConditionChanges?(changes: readonly ConditionChange[]): void;
}

export interface Runner extends Schedule {
  /** True once a pass has finished. */
  ready(): boolean;
  /** The fleet configs last published. */
  fleets(): readonly FleetConfig[];
  /** Each object's last stamped status, by `statusKey`. */
  statuses(): ReadonlyMap<string, ObjectStatus>;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const NO_PROBLEMS: ReadonlyMap<string, InfraProblem> = new Map();

export function createRunner(options: RunnerOptions): Runner {
  const { source, infra, statuses: sink } = options;
  const metrics = options.metrics ?? createRunnerMetrics();
  const trace = options.trace ?? (() => {});
  const applies = options.applies ?? (() => true);
  const cache = createTranslateCache();
  // The metrics count what the cache counts: the same object.
  cache.translations = metrics.translations;
  const published = createPublishedFleets(options.discovery, metrics);
  const stamper = createStatusStamper();
  const shownOf = sink.shown?.bind(sink);
  let ready = false;
  // The translation's statuses as last stamped: a delta from them stamps and shows only what changed.
  let stampedFrom: readonly ObjectStatus[] | undefined;

  /** Against the statuses last stamped: what those about to be stamped turned False, or back True. */
  function tellConditionChanges(next: readonly ObjectStatus[]): void {
    if (options.onConditionChanges === undefined) return;
    const lines = conditionChanges(stamper.current(), next);
    if (lines.length > 0) options.onConditionChanges(lines);
  }

  /** Stamps and shows the pass's statuses: what changed when the translation and the sink can say, else all. */
  async function statuses(
    result: TranslateResult,
    problems: ReadonlyMap<string, InfraProblem>,
  ): Promise<void> {
    const delta = result.statusDelta;
    const now = new Date();
    if (
      delta !== undefined &&
      delta.since === stampedFrom &&
      sink.showChanged !== undefined &&
      sink.wantsAll?.() !== true
    ) {
      const changed = withInfraProblems(delta.changed, result.infra, problems);
      tellConditionChanges(changed);
      const stamped = stamper.stampChanged(changed, delta.removed, shownOf, now);
      stampedFrom = result.statuses;
      trace('statuses');
      ready = true;
      await sink.showChanged(stamped, delta.removed);
      return;
    }
    const amended = withInfraProblems(result.statuses, result.infra, problems);
    tellConditionChanges(amended);
    const stamped = stamper.stamp(amended, shownOf, now);
    stampedFrom = result.statuses;
    trace('statuses');
    ready = true;
    await sink.show(stamped);
  }

  function translated(snapshot: ResourceSnapshot): { result: TranslateResult; dataPlane: DataPlaneState } {
    const started = performance.now();
    const dataPlane = source.dataPlane(published.current(), snapshot);
    const result = translate(snapshot, { ...options.translate, cache }, dataPlane);
    const seconds = (performance.now() - started) / 1000;
    metrics.translateSecondsSum += seconds;
    metrics.reconciles++;
    options.onTranslated?.(result, { number: metrics.reconciles, seconds });
    trace('translated');
    return { result, dataPlane };
  }

  async function pass(): Promise<boolean> {
    trace('pass');
    // Statuses count only from a pass that read the data plane as the one applying: a replica that takes the lease
    // meanwhile read it without its peers' proxies (and without the reconnect grace), and would write that.
    const applying = applies();
    const snapshot = source.snapshot();
    trace('snapshot');
    const { result, dataPlane } = translated(snapshot);
    published.publish(result.fleets, result.fleetChanges);
    trace('discovery-sent');
    // The discovery stream writes on the next loop turn: let it go out before infrastructure and statuses.
    await nextTurn();
    if (!applying || !applies()) {
      ready = true;
      return false;
    }
    const outcome = await infra.apply(result, dataPlane);
    await statuses(result, outcome.problems ?? NO_PROBLEMS);
    return outcome.learnt === true;
  }

  const schedule = createSchedule(
    pass,
    (error, retryInMs) => {
      metrics.reconcileErrors++;
      options.onError(error, retryInMs);
    },
    { ...RUNNER_DEFAULTS, ...options.timings },
  );
  return {
    ...schedule,
    ready: () => ready,
    fleets: () => published.current(),
    statuses: () => stamper.current(),
  };
}

// Proxy counters and histograms, rendered in the Prometheus text exposition format.
import { buildInfoMetric } from '../../platform/build-info.js';
import { family, familyHead, type LabelPairs, sampleLine } from '../../platform/prometheus-text.js';
import type { SpanOutcomes } from './span-exporter.js';

const BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Everything counted for one (listener, route): looked up by the two names, no key string per request. */
interface RouteStats {
  listener: string;
  route: string;
  byCode: Map<number, number>;
  /** Per bucket, not cumulative (made cumulative when rendered); the last is +Inf. */
  buckets: number[];
  sum: number;
  count: number;
}

/** The policy label of a route's ExternalAuth filter, which the route's name follows. */
export const EXTERNAL_AUTH_POLICY_PREFIX = 'ExternalAuth ';
/** The policy label of a listener's pre-routing filter, its VirtualHost's name and index following. */
export const LISTENER_FILTER_POLICY_PREFIX = 'ListenerFilter ';

/** What the applied config holds: series of anything else are dropped (a deleted route's series go with it). */
export interface LiveNames {
  listeners: NameSet;
  routes: NameSet;
  clusters: NameSet;
  /** The rate-limit rules the routes have (`RateLimitRule.name`). */
  rateLimitRules: NameSet;
  /** The access policies the config holds (`FleetPolicy.name`). */
  policies: NameSet;
}

/** What a set of names needs to answer here (a Set, or a Map counting each name's holders). */
export interface NameSet {
  has(name: string): boolean;
}

/** The route label of requests no route matched. */
const NO_ROUTE = '-';

/** Counts as plain data: what a worker reports to the proxy's primary, which adds the workers' up. */
export interface MetricsSnapshot {
  routes: {
    listener: string;
    route: string;
    byCode: [number, number][];
    buckets: number[];
    sum: number;
    count: number;
  }[];
  /** `<cluster>\u0000<kind>` → count. */
  upstreamErrors: [string, number][];
  /** Cluster → requests sent again by a route's retry policy. */
  upstreamRetries: [string, number][];
  /** `<cluster>\u0000<outcome>` → request copies of RequestMirror filters. */
  upstreamMirrors: [string, number][];
  connections: [string, number][];
  /** Listener → connections closed at accept because the listener had maxConnections open. */
  refusedConnections: [string, number][];
  /** `<rule>\u0000<allowed|limited>` → rate-limit decisions. */
  rateLimits: [string, number][];
  /** `<scope>\u0000<event>` → rate-limit store events (round trips, failures, failed open or closed). */
  rateLimitStore: [string, number][];
  /** Connections accepted since start: how a proxy's workers share the load. */
  accepted: number;
  inFlight: number;
  /** Spans sent to the collector and spans lost (queue full, export failed). */
  spans: { exported: number; dropped: number };
  /** `<policy>\u0000<rule>\u0000<outcome>` → access decisions. */
  accessDecisions: [string, number][];
  /** `<listener>\u0000<route>` → layer-4 connections and UDP flows ended. */
  layer4Sessions: [string, number][];
  /** `<listener>\u0000<route>` → their durations added up, in seconds. */
  layer4Seconds: [string, number][];
  /** `<listener>\u0000<route>\u0000<received|sent>` → their bytes from and to the client. */
  layer4Bytes: [string, number][];
}

/** One ended layer-4 connection or UDP flow, as its metrics count it. */
export interface Layer4Session {
  listener: string;
  /** `-`: no route took it (refused). */
  route: string;
  bytesReceived: number;
  bytesSent: number;
  seconds: number;
}

export type MirrorOutcome = 'answered' | 'failed' | 'skipped';

export interface ProxyMetrics {
  /**
   * A new config: series of listeners, routes and clusters not in it are dropped (at the next render) and no new
   * ones start. `names` is called at most once per config, when first needed: an apply does not pay for it.
   */
  retain(names: () => LiveNames): void;
  request(listener: string, route: string, code: number, seconds: number): void;
  upstreamError(cluster: string, kind: string): void;
  upstreamRetry(cluster: string): void;
  /** A RequestMirror copy: `answered` (any status), `failed` (no answer in time), `skipped` (body not held whole). */
  upstreamMirror(cluster: string, outcome: MirrorOutcome): void;
  /** A policy's verdict on a request: `rule` decided it (`default`: none did), `outcome` allowed or denied. */
  readonly accessDecision: (policy: string, rule: string, outcome: 'allowed' | 'denied') => void;
  connectionOpened(listener: string): void;
  connectionRefused(listener: string): void;
  /** An ended layer-4 connection or UDP flow: counted, its bytes each way and its duration added. */
  layer4Session(session: Layer4Session): void;
  connectionClosed(listener: string): void;
  /** One rate-limit decision of a rule (ir RateLimitRule name). */
  rateLimit(rule: string, allowed: boolean): void;
  /** A rate-limit store's event: `round_trip`, `failure`, `failed_open`, `failed_closed`. */
  rateLimitStore(scope: string, event: string): void;
  readonly inFlight: number;
  requestStarted(): void;
  requestFinished(): void;
  /** The tracing exporter's counts. */
  readonly spans: SpanOutcomes;
  /** Live series only (a config change prunes first). */
  snapshot(): MetricsSnapshot;
  render(): string;
}

export function createProxyMetrics(): ProxyMetrics {
  return new ProxyMetricsTable();
}

function bump(map: Map<string, number>, key: string, by = 1): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

/** One process's series: a request allocates only when it starts a new one. */
class ProxyMetricsTable implements ProxyMetrics {
  private readonly stats = new Map<string, Map<string, RouteStats>>();
  private readonly upstreamErrors = new Map<string, number>();
  private readonly upstreamRetries = new Map<string, number>();
  private readonly upstreamMirrors = new Map<string, number>();
  private readonly connections = new Map<string, number>();
  private readonly refusedConnections = new Map<string, number>();
  private readonly rateLimits = new Map<string, number>();
  private readonly rateLimitStores = new Map<string, number>();
  private readonly accessDecisions = new Map<string, number>();
  private readonly layer4Sessions = new Map<string, number>();
  private readonly layer4Seconds = new Map<string, number>();
  private readonly layer4Bytes = new Map<string, number>();
  readonly accessDecision = (policy: string, rule: string, outcome: 'allowed' | 'denied'): void => {
    bump(this.accessDecisions, `${policy}\u0000${rule}\u0000${outcome}`);
  };
  private accepted = 0;
  private requestsInFlight = 0;
  private readonly spanCounts = { exported: 0, dropped: 0 };
  readonly spans: SpanOutcomes = {
    exported: (n) => {
      this.spanCounts.exported += n;
    },
    dropped: (n) => {
      this.spanCounts.dropped += n;
    },
  };
  /** Undefined until the first config: every name is live. */
  private liveSource: (() => LiveNames) | undefined = undefined;
  private liveNames: LiveNames | undefined = undefined;
  private pruned = true;

  retain(names: () => LiveNames): void {
    this.liveSource = names;
    this.liveNames = undefined;
    this.pruned = false;
  }

  request(listener: string, route: string, code: number, seconds: number): void {
    let routes = this.stats.get(listener);
    if (routes === undefined) {
      // A request that finishes after its listener went away starts no series again.
      if (!this.isLive(listener, route)) return;
      routes = new Map();
      this.stats.set(listener, routes);
    }
    let r = routes.get(route);
    if (r === undefined) {
      if (!this.isLive(listener, route)) return;
      const buckets = new Array<number>(BUCKETS_SECONDS.length + 1).fill(0);
      r = { listener, route, byCode: new Map(), buckets, sum: 0, count: 0 };
      routes.set(route, r);
    }
    r.byCode.set(code, (r.byCode.get(code) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS_SECONDS.length && seconds > BUCKETS_SECONDS[i]!) i++;
    r.buckets[i]!++;
    r.sum += seconds;
    r.count++;
  }

  upstreamError(cluster: string, kind: string): void {
    if (this.live()?.clusters.has(cluster) === false) return;
    bump(this.upstreamErrors, `${cluster}\u0000${kind}`);
  }

  upstreamRetry(cluster: string): void {
    if (this.live()?.clusters.has(cluster) === false) return;
    bump(this.upstreamRetries, cluster);
  }

  upstreamMirror(cluster: string, outcome: MirrorOutcome): void {
    if (this.live()?.clusters.has(cluster) === false) return;
    bump(this.upstreamMirrors, `${cluster}\u0000${outcome}`);
  }

  connectionOpened(listener: string): void {
    this.accepted++;
    bump(this.connections, listener);
  }

  connectionRefused(listener: string): void {
    bump(this.refusedConnections, listener);
  }

  layer4Session(session: Layer4Session): void {
    // One that ends after its listener or route went away starts no series again.
    if (!this.isLive(session.listener, session.route)) return;
    const key = `${session.listener}\u0000${session.route}`;
    bump(this.layer4Sessions, key);
    bump(this.layer4Seconds, key, session.seconds);
    bump(this.layer4Bytes, `${key}\u0000received`, session.bytesReceived);
    bump(this.layer4Bytes, `${key}\u0000sent`, session.bytesSent);
  }

  rateLimit(rule: string, allowed: boolean): void {
    bump(this.rateLimits, `${rule}\u0000${allowed ? 'allowed' : 'limited'}`);
  }

  rateLimitStore(scope: string, event: string): void {
    bump(this.rateLimitStores, `${scope}\u0000${event}`);
  }

  connectionClosed(listener: string): void {
    bump(this.connections, listener, -1);
    // The last connection of a removed listener: its gauge goes.
    if (this.connections.get(listener) === 0 && this.live()?.listeners.has(listener) === false) {
      this.connections.delete(listener);
    }
  }

  get inFlight(): number {
    return this.requestsInFlight;
  }

  requestStarted(): void {
    this.requestsInFlight++;
  }

  requestFinished(): void {
    this.requestsInFlight--;
  }

  snapshot(): MetricsSnapshot {
    const names = this.live();
    if (!this.pruned && names !== undefined) this.prune(names);
    const routes = [...this.stats.values()].flatMap((byRoute) =>
      [...byRoute.values()].map((r) => ({ ...r, byCode: [...r.byCode], buckets: r.buckets.slice() })),
    );
    return {
      routes,
      upstreamErrors: [...this.upstreamErrors],
      upstreamRetries: [...this.upstreamRetries],
      upstreamMirrors: [...this.upstreamMirrors],
      connections: [...this.connections],
      refusedConnections: [...this.refusedConnections],
      rateLimits: [...this.rateLimits],
      rateLimitStore: [...this.rateLimitStores],
      accepted: this.accepted,
      inFlight: this.requestsInFlight,
      spans: { ...this.spanCounts },
      accessDecisions: [...this.accessDecisions],
      layer4Sessions: [...this.layer4Sessions],
      layer4Seconds: [...this.layer4Seconds],
      layer4Bytes: [...this.layer4Bytes],
    };
  }

  render(): string {
    return renderMetrics(this.snapshot());
  }

  /** The applied config's names, asked for once per config (undefined before the first). */
  private live(): LiveNames | undefined {
    if (this.liveSource !== undefined) this.liveNames ??= this.liveSource();
    return this.liveNames;
  }

  private isLive(listener: string, route: string): boolean {
    const names = this.live();
    return (
      names === undefined ||
      (names.listeners.has(listener) && (route === NO_ROUTE || names.routes.has(route)))
    );
  }

  /** Drops the series of names the config no longer has (an open connection's gauge stays until it closes). */
  private prune(names: LiveNames): void {
    this.pruned = true;
    for (const [listener, routes] of this.stats) {
      if (!names.listeners.has(listener)) {
        this.stats.delete(listener);
        continue;
      }
      for (const route of routes.keys()) if (!this.isLive(listener, route)) routes.delete(route);
    }
    for (const counts of [this.upstreamErrors, this.upstreamMirrors]) {
      for (const key of counts.keys()) {
        if (!names.clusters.has(key.slice(0, key.indexOf('\u0000')))) counts.delete(key);
      }
    }
    for (const key of this.rateLimits.keys()) {
      if (!names.rateLimitRules.has(key.slice(0, key.indexOf('\u0000')))) this.rateLimits.delete(key);
    }
    for (const key of this.accessDecisions.keys()) {
      if (!livePolicy(names, key.slice(0, key.indexOf('\u0000')))) this.accessDecisions.delete(key);
    }
    for (const cluster of this.upstreamRetries.keys()) {
      if (!names.clusters.has(cluster)) this.upstreamRetries.delete(cluster);
    }
    for (const [listener, n] of this.connections) {
      if (n <= 0 && !names.listeners.has(listener)) this.connections.delete(listener);
    }
    for (const counts of [this.layer4Sessions, this.layer4Seconds, this.layer4Bytes]) {
      for (const key of counts.keys()) {
        const [listener = '', route = ''] = key.split('\u0000');
        if (!this.isLive(listener, route)) counts.delete(key);
      }
    }
  }
}

function addInto(map: Map<string, number>, entries: [string, number][]): void {
  for (const [key, n] of entries) map.set(key, (map.get(key) ?? 0) + n);
}

/** A snapshot of nothing counted yet. */
export function emptyMetrics(): MetricsSnapshot {
  return {
    routes: [],
    upstreamErrors: [],
    upstreamRetries: [],
    upstreamMirrors: [],
    connections: [],
    refusedConnections: [],
    rateLimits: [],
    rateLimitStore: [],
    accepted: 0,
    inFlight: 0,
    spans: { exported: 0, dropped: 0 },
    accessDecisions: [],
    layer4Sessions: [],
    layer4Seconds: [],
    layer4Bytes: [],
  };
}

/** The workers' counts as one proxy's: counters, histogram buckets and gauges added up series by series. */
export function mergeMetrics(snapshots: readonly MetricsSnapshot[]): MetricsSnapshot {
  const routes = new Map<string, MetricsSnapshot['routes'][number]>();
  const upstreamErrors = new Map<string, number>();
  const upstreamRetries = new Map<string, number>();
  const upstreamMirrors = new Map<string, number>();
  const connections = new Map<string, number>();
  const refusedConnections = new Map<string, number>();
  const rateLimits = new Map<string, number>();
  const rateLimitStore = new Map<string, number>();
  const accessDecisions = new Map<string, number>();
  const layer4Sessions = new Map<string, number>();
  const layer4Seconds = new Map<string, number>();
  const layer4Bytes = new Map<string, number>();
  let accepted = 0;
  let inFlight = 0;
  const spans = { exported: 0, dropped: 0 };
  for (const s of snapshots) {
    spans.exported += s.spans.exported;
    spans.dropped += s.spans.dropped;
    for (const r of s.routes) {
      const key = `${r.listener}\u0000${r.route}`;
      const into = routes.get(key);
      if (into === undefined) {
        routes.set(key, { ...r, byCode: r.byCode.map(([c, n]) => [c, n]), buckets: r.buckets.slice() });
        continue;
      }
      const codes = new Map(into.byCode);
      for (const [code, n] of r.byCode) codes.set(code, (codes.get(code) ?? 0) + n);
      into.byCode = [...codes];
      r.buckets.forEach((n, i) => {
        into.buckets[i] = (into.buckets[i] ?? 0) + n;
      });
      into.sum += r.sum;
      into.count += r.count;
    }
    addInto(upstreamErrors, s.upstreamErrors);
    addInto(upstreamRetries, s.upstreamRetries);
    addInto(upstreamMirrors, s.upstreamMirrors);
    addInto(connections, s.connections);
    addInto(refusedConnections, s.refusedConnections);
    addInto(rateLimits, s.rateLimits);
    addInto(rateLimitStore, s.rateLimitStore);
    addInto(accessDecisions, s.accessDecisions);
    addInto(layer4Sessions, s.layer4Sessions);
    addInto(layer4Seconds, s.layer4Seconds);
    addInto(layer4Bytes, s.layer4Bytes);
    accepted += s.accepted;
    inFlight += s.inFlight;
  }
  return {
    routes: [...routes.values()],
    upstreamErrors: [...upstreamErrors],
    upstreamRetries: [...upstreamRetries],
    upstreamMirrors: [...upstreamMirrors],
    connections: [...connections],
    refusedConnections: [...refusedConnections],
    rateLimits: [...rateLimits],
    rateLimitStore: [...rateLimitStore],
    accepted,
    inFlight,
    spans,
    accessDecisions: [...accessDecisions],
    layer4Sessions: [...layer4Sessions],
    layer4Seconds: [...layer4Seconds],
    layer4Bytes: [...layer4Bytes],
  };
}

/** A counter family whose series are kept under `<label 1>\u0000<label 2>...` keys, one value per label name. */
function keyedCounter(
  name: string,
  help: string,
  counts: readonly [string, number][],
  labels: readonly string[],
): string[] {
  return family(
    name,
    'counter',
    help,
    counts.map(([key, n]) => {
      const values = key.split('\u0000');
      const pairs: Record<string, string> = {};
      labels.forEach((label, i) => {
        pairs[label] = values[i] ?? '';
      });
      return [pairs, n] as const;
    }),
  );
}

/** The layer-4 (TLS, TCP, UDP listener) families: sessions ended, their time and their bytes each way. */
function layer4Families(snapshot: MetricsSnapshot): string[] {
  const byRoute = ['listener', 'route'];
  return [
    ...keyedCounter(
      'portico_layer4_sessions_total',
      'Layer-4 connections and UDP flows ended, by listener and route (- : refused, no route took it).',
      snapshot.layer4Sessions,
      byRoute,
    ),
    ...keyedCounter(
      'portico_layer4_session_seconds_total',
      'Layer-4 connections and UDP flows: their durations added up, by listener and route.',
      snapshot.layer4Seconds,
      byRoute,
    ),
    ...keyedCounter(
      'portico_layer4_bytes_total',
      'Layer-4 bytes from (received) and to (sent) the client, by listener, route and direction.',
      snapshot.layer4Bytes,
      [...byRoute, 'direction'],
    ),
  ];
}

/** The Prometheus text exposition of a snapshot. */
export function renderMetrics(snapshot: MetricsSnapshot): string {
  const out: string[] = [];
  const requests: [LabelPairs, number][] = [];
  for (const { listener, route, byCode } of snapshot.routes) {
    for (const [code, n] of byCode) requests.push([{ listener, route, code: String(code) }, n]);
  }
  out.push(
    ...family(
      'portico_requests_total',
      'counter',
      'Requests answered, by listener, route and status code.',
      requests,
    ),
  );
  out.push(
    ...familyHead('portico_request_duration_seconds', 'histogram', 'Time from request to response end.'),
  );
  for (const r of snapshot.routes) {
    const names = { listener: r.listener, route: r.route };
    let cumulative = 0;
    BUCKETS_SECONDS.forEach((le, i) => {
      cumulative += r.buckets[i]!;
      out.push(
        sampleLine('portico_request_duration_seconds_bucket', { ...names, le: String(le) }, cumulative),
      );
    });
    out.push(sampleLine('portico_request_duration_seconds_bucket', { ...names, le: '+Inf' }, r.count));
    out.push(sampleLine('portico_request_duration_seconds_sum', names, r.sum));
    out.push(sampleLine('portico_request_duration_seconds_count', names, r.count));
  }
  out.push(
    ...keyedCounter(
      'portico_upstream_errors_total',
      'Upstream failures, by cluster and kind.',
      snapshot.upstreamErrors,
      ['cluster', 'kind'],
    ),
  );
  out.push(
    ...family(
      'portico_upstream_retries_total',
      'counter',
      'Requests sent again by a route retry policy, by cluster.',
      [...snapshot.upstreamRetries].map(([cluster, n]) => [{ cluster }, n] as const),
    ),
  );
  out.push(
    ...keyedCounter(
      'portico_upstream_mirrors_total',
      'Request copies of RequestMirror filters, by mirror cluster and outcome (answered, failed, skipped).',
      snapshot.upstreamMirrors,
      ['cluster', 'outcome'],
    ),
  );
  out.push(
    ...family(
      'portico_active_connections',
      'gauge',
      'Open client connections, by listener.',
      [...snapshot.connections].map(([listener, n]) => [{ listener }, n] as const),
    ),
  );
  out.push(
    ...family(
      'portico_connections_refused_total',
      'counter',
      'Client connections closed at accept: the listener had its maximum open.',
      [...snapshot.refusedConnections].map(([listener, n]) => [{ listener }, n] as const),
    ),
  );
  out.push(
    ...family(
      'portico_rate_limit_decisions_total',
      'counter',
      'Rate-limit decisions, by policy, rule and decision (allowed or limited).',
      [...snapshot.rateLimits].map(([key, n]) => {
        const [name = '', decision = ''] = key.split('\u0000');
        const cut = name.lastIndexOf('/');
        return [{ policy: name.slice(0, Math.max(0, cut)), rule: name.slice(cut + 1), decision }, n] as const;
      }),
    ),
  );
  out.push(
    ...keyedCounter(
      'portico_rate_limit_store_events_total',
      'Rate-limit store events, by scope: round trips, failures, requests let through or refused on a failure.',
      snapshot.rateLimitStore,
      ['scope', 'event'],
    ),
  );
  out.push(
    ...family('portico_requests_in_flight', 'gauge', 'Requests being answered.', [
      [undefined, snapshot.inFlight],
    ]),
  );
  out.push(
    ...family(
      'portico_tracing_spans_total',
      'counter',
      'Spans by outcome: exported to the collector, or dropped.',
      [
        [{ outcome: 'exported' }, snapshot.spans.exported],
        [{ outcome: 'dropped' }, snapshot.spans.dropped],
      ],
    ),
  );
  out.push(
    ...keyedCounter(
      'portico_proxy_auth_decisions_total',
      'AccessPolicy verdicts, by policy, the rule that decided (default: none did) and outcome (allowed, denied).',
      snapshot.accessDecisions,
      ['policy', 'rule', 'outcome'],
    ),
  );
  out.push(...layer4Families(snapshot));
  out.push(buildInfoMetric());
  return `${out.join('\n')}\n`;
}

/** A policy label is live while the config holds the policy; a route's ExternalAuth filter's, while the route is. */
function livePolicy(names: LiveNames, policy: string): boolean {
  // A listener filter's series are few (16 at most per VirtualHost): kept.
  if (policy.startsWith(LISTENER_FILTER_POLICY_PREFIX)) return true;
  if (policy.startsWith(EXTERNAL_AUTH_POLICY_PREFIX))
    return names.routes.has(policy.slice(EXTERNAL_AUTH_POLICY_PREFIX.length));
  return names.policies.has(policy);
}

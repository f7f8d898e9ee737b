// Proxy counters and histograms, rendered in the Prometheus text exposition format.

const BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

interface Histogram {
  labels: string;
  counts: number[];
  sum: number;
  count: number;
}

export interface ProxyMetrics {
  request(listener: string, route: string, code: number, seconds: number): void;
  upstreamError(cluster: string, kind: string): void;
  connectionOpened(listener: string): void;
  connectionClosed(listener: string): void;
  readonly inFlight: number;
  requestStarted(): void;
  requestFinished(): void;
  render(): string;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labels(pairs: Record<string, string>): string {
  return Object.entries(pairs)
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',');
}

export function createProxyMetrics(): ProxyMetrics {
  const requests = new Map<string, number>();
  const histograms = new Map<string, Histogram>();
  const upstreamErrors = new Map<string, number>();
  const connections = new Map<string, number>();
  let inFlight = 0;

  const bump = (map: Map<string, number>, key: string, by = 1): void => {
    map.set(key, (map.get(key) ?? 0) + by);
  };

  return {
    request(listener, route, code, seconds) {
      const key = `${listener}\u0000${route}`;
      bump(requests, `${key}\u0000${code}`);
      let h = histograms.get(key);
      if (h === undefined) {
        h = { labels: labels({ listener, route }), counts: BUCKETS_SECONDS.map(() => 0), sum: 0, count: 0 };
        histograms.set(key, h);
      }
      for (let i = 0; i < BUCKETS_SECONDS.length; i++) if (seconds <= BUCKETS_SECONDS[i]!) h.counts[i]!++;
      h.sum += seconds;
      h.count++;
    },
    upstreamError(cluster, kind) {
      bump(upstreamErrors, `${cluster}\u0000${kind}`);
    },
    connectionOpened(listener) {
      bump(connections, listener);
    },
    connectionClosed(listener) {
      bump(connections, listener, -1);
    },
    get inFlight() {
      return inFlight;
    },
    requestStarted() {
      inFlight++;
    },
    requestFinished() {
      inFlight--;
    },
    render() {
      const out: string[] = [];
      out.push('# HELP portico_requests_total Requests answered, by listener, route and status code.');
      out.push('# TYPE portico_requests_total counter');
      for (const [key, n] of requests) {
        const [listener = '', route = '', code = ''] = key.split('\u0000');
        out.push(`portico_requests_total{${labels({ listener, route, code })}} ${n}`);
      }
      out.push('# HELP portico_request_duration_seconds Time from request to response end.');
      out.push('# TYPE portico_request_duration_seconds histogram');
      for (const h of histograms.values()) {
        BUCKETS_SECONDS.forEach((le, i) => {
          out.push(`portico_request_duration_seconds_bucket{${h.labels},le="${le}"} ${h.counts[i]}`);
        });
        out.push(`portico_request_duration_seconds_bucket{${h.labels},le="+Inf"} ${h.count}`);
        out.push(`portico_request_duration_seconds_sum{${h.labels}} ${h.sum}`);
        out.push(`portico_request_duration_seconds_count{${h.labels}} ${h.count}`);
      }
      out.push('# HELP portico_upstream_errors_total Upstream failures, by cluster and kind.');
      out.push('# TYPE portico_upstream_errors_total counter');
      for (const [key, n] of upstreamErrors) {
        const [cluster = '', kind = ''] = key.split('\u0000');
        out.push(`portico_upstream_errors_total{${labels({ cluster, kind })}} ${n}`);
      }
      out.push('# HELP portico_active_connections Open client connections, by listener.');
      out.push('# TYPE portico_active_connections gauge');
      for (const [listener, n] of connections) {
        out.push(`portico_active_connections{${labels({ listener })}} ${n}`);
      }
      out.push('# HELP portico_requests_in_flight Requests being answered.');
      out.push('# TYPE portico_requests_in_flight gauge');
      out.push(`portico_requests_in_flight ${inFlight}`);
      return `${out.join('\n')}\n`;
    },
  };
}

// A proxy's tracing: the ids, the share of new traces sampled and the exporter, made once per proxy, and the
// span one request becomes (OpenTelemetry's HTTP server conventions where they fit, portico.* otherwise).
import { performance } from 'node:perf_hooks';
import type { Logger } from '../../platform/log-line.js';
import type { AccessLogEntry } from './access-log.js';
import { type FinishedSpan, SpanExporter, type SpanOutcomes, type TracingOptions } from './span-exporter.js';
import { type TraceContext, TraceIds, traceContextFor } from './trace-context.js';

export interface Tracing {
  ids: TraceIds;
  sampling: number;
  exporter: SpanExporter;
}

export function createTracing(options: TracingOptions, outcomes: SpanOutcomes, log: Logger): Tracing {
  return {
    ids: new TraceIds(),
    sampling: options.sampling,
    exporter: new SpanExporter(options, outcomes, log),
  };
}

const TRACEPARENT_LENGTH = 11;

/** The trace a request joins (or starts), from the `traceparent` lines among its raw headers. */
export function requestTrace(tracing: Tracing, raw: readonly string[]): TraceContext {
  let received: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === TRACEPARENT_LENGTH && name.toLowerCase() === 'traceparent') {
      received ??= [];
      received.push(raw[i + 1]!);
    }
  }
  return traceContextFor(received ?? [], tracing.ids, tracing.sampling);
}

/** What one finished request tells its span: the fields it shares with the access log. */
export type RequestFacts = Pick<
  AccessLogEntry,
  | 'method'
  | 'path'
  | 'authority'
  | 'protocol'
  | 'status'
  | 'routeName'
  | 'listener'
  | 'upstreamHost'
  | 'clientAddress'
>;

/** The span of a request that started at `started` (performance.now()) and ends now. */
export function requestSpan(context: TraceContext, started: number, facts: RequestFacts): FinishedSpan {
  const origin = performance.timeOrigin;
  const query = facts.path.indexOf('?');
  const attributes: [string, string | number][] = [
    ['http.request.method', facts.method],
    ['url.path', query < 0 ? facts.path : facts.path.slice(0, query)],
    [
      'network.protocol.version',
      facts.protocol.startsWith('HTTP/') ? facts.protocol.slice(5) : facts.protocol,
    ],
    ['portico.listener', facts.listener],
  ];
  if (facts.status > 0) attributes.push(['http.response.status_code', facts.status]);
  if (facts.authority !== undefined) attributes.push(['server.address', facts.authority]);
  if (facts.routeName !== '-') attributes.push(['portico.route', facts.routeName]);
  if (facts.upstreamHost !== undefined) attributes.push(['portico.upstream.address', facts.upstreamHost]);
  if (facts.clientAddress !== undefined) attributes.push(['client.address', facts.clientAddress]);
  return {
    context,
    name: facts.method,
    startMs: origin + started,
    endMs: origin + performance.now(),
    attributes,
    error: facts.status === 0 || facts.status >= 500,
  };
}

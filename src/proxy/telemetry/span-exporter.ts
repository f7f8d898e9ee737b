// Spans out by OTLP over HTTP with the JSON encoding (ids as hex, times as decimal nanosecond strings): batched,
// one export in flight, a bounded queue. A collector that is slow, down or refusing costs dropped spans, counted,
// never a request's time: nothing here runs on a request's path but a push onto the queue.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tracingEndpointProblem } from '../../ir/tracing.js';
import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';
import type { TraceContext } from './trace-context.js';

export interface TracingOptions {
  /** The collector's OTLP/HTTP traces URL, e.g. http://otel-collector.observability:4318/v1/traces. */
  endpoint: string;
  /** The share of traces the proxy starts that are sampled, 0 to 1 (a caller's own decision is kept). */
  sampling: number;
  /** The `service.name` resource attribute; default portico-proxy. */
  serviceName?: string;
  /** The longest a span waits to share an export with others; default 1 s. */
  flushIntervalMs?: number;
}

/** One finished request's span. */
export interface FinishedSpan {
  context: TraceContext;
  name: string;
  startMs: number;
  endMs: number;
  /** OTLP attributes as key, value pairs (numbers become intValue or doubleValue). */
  attributes: [string, string | number][];
  /** The request ended in a server error (5xx) or without a response. */
  error: boolean;
}

export interface SpanOutcomes {
  exported(count: number): void;
  dropped(count: number): void;
}

const MAX_QUEUE = 2048;
const MAX_BATCH = 512;
const EXPORT_TIMEOUT_MS = 5_000;
const SPAN_KIND_SERVER = 2;
const STATUS_ERROR = 2;

/** The OTLP traces URL, or a PorticoError naming `source` (the rule is ir/tracing.ts's, shared with the translator). */
export function tracingEndpoint(value: string, source: string): URL {
  const problem = tracingEndpointProblem(value);
  if (problem !== undefined) throw new PorticoError('E_USAGE', `${source}: ${problem}`);
  return new URL(value);
}

export class SpanExporter {
  private queue: FinishedSpan[] = [];
  private timer: NodeJS.Timeout | undefined = undefined;
  private inFlight: Promise<void> | undefined = undefined;
  private readonly url: URL;
  private readonly resource: string;

  constructor(
    private readonly options: TracingOptions,
    private readonly outcomes: SpanOutcomes,
    private readonly log: Logger,
  ) {
    this.url = tracingEndpoint(options.endpoint, 'tracing endpoint');
    this.resource = JSON.stringify({
      attributes: [attribute('service.name', options.serviceName ?? 'portico-proxy')],
    });
  }

  record(span: FinishedSpan): void {
    if (this.queue.length >= MAX_QUEUE) {
      this.outcomes.dropped(1);
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= MAX_BATCH) this.flush();
    // Unref'd: waiting spans never keep a process alive; close() sends them before a proxy exits.
    else this.timer ??= setTimeout(() => this.flush(), this.options.flushIntervalMs ?? 1_000).unref();
  }

  /** Starts an export of what is queued, unless one is in flight (the next timer or full batch sends the rest). */
  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight !== undefined || this.queue.length === 0) return;
    const batch = this.queue.splice(0, MAX_BATCH);
    this.inFlight = this.send(batch).finally(() => {
      this.inFlight = undefined;
      if (this.queue.length > 0) this.timer ??= setTimeout(() => this.flush(), 0).unref();
    });
  }

  /** Sends what is queued and waits for it (at most the export timeout per batch): a proxy's last spans. */
  async close(): Promise<void> {
    if (this.inFlight !== undefined) await this.inFlight;
    while (this.queue.length > 0) {
      this.flush();
      await this.inFlight;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private send(batch: FinishedSpan[]): Promise<void> {
    const body = `{"resourceSpans":[{"resource":${this.resource},"scopeSpans":[{"scope":{"name":"portico"},"spans":[${batch.map(encodeSpan).join(',')}]}]}]}`;
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve) => {
      const failed = (why: string): void => {
        this.outcomes.dropped(batch.length);
        this.log.warn(`tracing: ${batch.length} spans dropped: ${why}`);
        resolve();
      };
      const req = send(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: EXPORT_TIMEOUT_MS,
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) {
            this.outcomes.exported(batch.length);
            resolve();
          } else failed(`the collector answered ${code}`);
        });
        res.on('error', (error) => failed(error.message));
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${EXPORT_TIMEOUT_MS} ms`)));
      req.on('error', (error) => failed(error.message));
      req.end(body);
    });
  }
}

function attribute(key: string, value: string | number): unknown {
  if (typeof value === 'string') return { key, value: { stringValue: value } };
  // OTLP's JSON carries 64-bit integers as strings.
  return Number.isInteger(value)
    ? { key, value: { intValue: String(value) } }
    : { key, value: { doubleValue: value } };
}

/** Milliseconds (fractions from performance.now() kept to the microsecond) as OTLP's nanosecond string. */
function nanos(ms: number): string {
  const micros = Math.round(ms * 1000);
  return `${micros}000`;
}

function encodeSpan(span: FinishedSpan): string {
  const { context } = span;
  return JSON.stringify({
    traceId: context.traceId,
    spanId: context.spanId,
    ...(context.parentSpanId === undefined ? {} : { parentSpanId: context.parentSpanId }),
    name: span.name,
    kind: SPAN_KIND_SERVER,
    startTimeUnixNano: nanos(span.startMs),
    endTimeUnixNano: nanos(span.endMs),
    attributes: span.attributes.map(([key, value]) => attribute(key, value)),
    status: span.error ? { code: STATUS_ERROR } : {},
  });
}

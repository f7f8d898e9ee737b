// Answers one HTTP request: local responses, redirects, and forwarding with streaming in both directions,
// route/backend timeouts, client-abort cancellation and the status codes of docs/architecture.md (What the proxy answers).
import { performance } from 'node:perf_hooks';
import type { Endpoint } from '../ir/fleet-config.js';
import { backoffDelay, jittered } from '../platform/backoff.js';
import {
  type AccessVerdict,
  bodyBytesOf,
  checkAccess,
  credentialQueryOf,
  type Settled,
  withoutQueryParameters,
} from './access/pipeline.js';
import { bufferedBody, respondWithBody } from './authorize.js';
import { cancel, Deadline, schedule } from './deadlines.js';
import type {
  ClientRequest,
  ListenerContext,
  ProxyResponse,
  RequestBody,
  ResponseListener,
} from './exchange.js';
import { rateLimitedLines, rateStandingLines } from './limits/rate-limit-headers.js';
import type { RateDecision } from './limits/rate-limiter.js';
import { sendMirrors } from './mirror.js';
import { runListenerFilters } from './routing/listener-filters.js';
import {
  authorizationReach,
  type ForwardPlan,
  nextEndpoint,
  type Plan,
  resolveRequest,
  upstreamHeaders,
} from './routing/resolve.js';
import { endpointKey, type Snapshot } from './routing/snapshot.js';
import type { ProxyRuntime } from './runtime.js';
import { type AccessLogEntry, type ResponseFlag, redactedPath } from './telemetry/access-log.js';
import { recordTelemetry } from './telemetry/record.js';
import { type TraceContext, traceparentOf } from './telemetry/trace-context.js';
import { requestTrace } from './telemetry/tracing.js';
import { BodyGate, ReplayBody } from './upstream/body-gate.js';
import { sendable } from './upstream/http1-head.js';
import type {
  AttemptSink,
  UpstreamAttempt,
  UpstreamCall,
  UpstreamError,
  UpstreamErrorKind,
} from './upstream/upstream.js';
import { grpcAnswerLines } from './wire/grpc-status.js';
import {
  applyHeaderModifier,
  DROP_FROM_RESPONSE,
  type HeaderMap,
  hopByHopFree,
  responseHeaders,
} from './wire/headers.js';
import { ResponseHead, type UpstreamHead } from './wire/response-head.js';
import { forwardableTrailers } from './wire/trailers.js';

/**
 * An empty-bodied answer from the proxy itself; `close` while draining or when the listener goes away. `extra`:
 * header lines (name, value, ...) it carries besides a location (a CORS preflight's).
 */
export function respondLocally(
  res: ProxyResponse,
  status: number,
  close: boolean,
  location?: string,
  extra?: readonly string[],
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (res.grpc && location === undefined && extra === undefined) {
    // Trailers-only: HTTP 200 whose headers carry the gRPC status.
    res.writeHead(200, grpcAnswerLines(status));
    res.end();
    return;
  }
  const headers = ['server', 'portico', 'content-length', '0'];
  if (location !== undefined) headers.push('location', location);
  if (extra !== undefined) headers.push(...extra);
  if (close) headers.push('connection', 'close');
  try {
    res.writeHead(status, headers, location !== undefined || extra !== undefined);
  } catch {
    // Only a location built from odd request bytes can be refused: answer without it.
    res.writeHead(500, ['server', 'portico', 'content-length', '0']);
  }
  res.end();
}

/** Header lines from a header map. */
function flatHeaders(raw: HeaderMap): string[] {
  const flat: string[] = [];
  for (const name in raw) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value === 'string') flat.push(name, value);
    else for (const v of value) flat.push(name, v);
  }
  return flat;
}

/**
 * One forwarded request: the upstream exchange's sink, its timers, retries and the client response. A class
 * so that the per-request state is one object with shared methods instead of a dozen closures.
 */
class Forwarding implements AttemptSink, UpstreamAttempt {
  private exchange: UpstreamCall | undefined = undefined;
  private finished = false;
  private responded = false;
  private retriesLeft = 2;
  /** Retries made under the route's retry policy, and the wait before the next one. */
  private retries = 0;
  private retryTimer: NodeJS.Timeout | undefined = undefined;
  private startedAt = 0;
  private readonly routeDeadline: Deadline | undefined = undefined;
  private backendDeadline: Deadline | undefined = undefined;
  private activeKey: string | undefined = undefined;
  /** Holds a place of its connection's upstream share (HTTP/2 clients). */
  private sharing = false;
  private readonly bodyless: boolean;
  private readonly chunked: boolean;
  private readonly method: string;
  /** The request headers after request header filters; undefined: built straight from the raw lines. */
  headers: HeaderMap | undefined = undefined;
  /** Holds the request body until it is in (or large): set while no upstream connection is taken yet. */
  private gate: BodyGate | undefined = undefined;
  /** The body as sent upstream (buffered first, see BodyGate); null: none. */
  body: RequestBody | null = null;

  constructor(
    private readonly rt: ProxyRuntime,
    readonly plan: ForwardPlan,
    readonly request: ClientRequest,
    private readonly res: ProxyResponse,
    private readonly closing: boolean,
    readonly proto: 'http' | 'https',
    /** The request's record: when it arrived, and what the access log says about it. */
    private readonly answer: Answer,
    /** The body to send instead of the client's stream (read already, for an access check). */
    private readonly source: RequestBody | null = request.body,
  ) {
    this.method = request.method;
    this.bodyless = source === null;
    // A chunked client body is re-framed by us; its length is unknown, so no content-length goes along.
    this.chunked = request.chunked;
    // 0 is the Gateway API's "no timeout".
    if (plan.action.timeoutMs > 0) {
      this.routeDeadline = new Deadline(this);
      schedule(this.routeDeadline, plan.action.timeoutMs, answer.started);
    }
  }

  start(): void {
    const plan = this.plan;
    const headers =
      plan.requestModifiers.length > 0
        ? upstreamHeaders(this.request, plan, this.proto, false, this.traceparent())
        : undefined;
    this.headers = headers;
    if (plan.configuredRequest && !sendable(plan.target, headers, plan.hostRewrite)) {
      // Invalid header values (from a filter) are refused before anything is sent.
      this.finish();
      this.answer.flag = 'invalid_request';
      this.rt.metrics.upstreamError(this.plan.cluster.name, 'invalid_request');
      this.rt.options.log.warn(
        'upstream request refused: a configured header or path holds invalid characters',
      );
      respondLocally(this.res, 502, this.closing);
      return;
    }
    const body = this.source;
    if (body === null) {
      // The request arrived just now: its start time is this attempt's (one clock reading fewer).
      this.attempt(this.plan.endpoint, this.answer.started);
      if (plan.mirrors !== undefined)
        sendMirrors(this.rt, plan.mirrors, this.request, this.proto, null, this.traceparent());
      return;
    }
    this.gate = new BodyGate(body, this.rt.options.limits.requestBodyBufferBytes, (buffered) => {
      this.gate = undefined;
      this.body = buffered;
      if (this.finished) return;
      this.attempt(this.plan.endpoint);
      if (plan.mirrors !== undefined)
        sendMirrors(this.rt, plan.mirrors, this.request, this.proto, buffered, this.traceparent());
    });
  }

  private attempt(endpoint: Endpoint, now = performance.now()): void {
    const share = this.request.upstreamShare;
    if (share !== undefined && !this.sharing) {
      let waited = false;
      share.take(() => {
        // It ended (client gone, route timeout) while it waited: the place goes to the next.
        if (this.finished) {
          share.give();
          return;
        }
        this.sharing = true;
        this.attempt(endpoint, waited ? performance.now() : now);
      });
      waited = true;
      return;
    }
    const rt = this.rt;
    if (rt.options.loadBalancing === 'least-request') {
      const key = endpointKey(endpoint);
      this.activeKey = key;
      rt.activeByEndpoint.set(key, (rt.activeByEndpoint.get(key) ?? 0) + 1);
    }
    this.startedAt = now;
    this.answer.endpoint = endpoint;
    const backendTimeoutMs = this.plan.action.backendTimeoutMs;
    if (backendTimeoutMs !== undefined && backendTimeoutMs > 0) {
      // Its own owner: an attempt that times out may be retried, where the route's deadline ends the request.
      this.backendDeadline ??= new Deadline({ timeout: () => this.attemptTimedOut() });
      schedule(this.backendDeadline, backendTimeoutMs, this.startedAt);
    }
    // The forwarding is the attempt itself: its plan, request, headers and body as they stand (no object per try).
    rt.upstreams[this.plan.protocol].send(endpoint, this, this);
  }

  /**
   * Schedules the route policy's next retry, after its backoff, to an endpoint picked afresh; false when none is
   * left, or the body cannot be sent again (it outgrew the gate, so part of it went upstream and is gone).
   */
  private retryLater(): boolean {
    const policy = this.plan.action.retry;
    if (this.finished || policy === undefined || this.retries >= policy.attempts) return false;
    if (this.body !== null) {
      const again = this.body instanceof ReplayBody ? this.body.again() : undefined;
      if (again === undefined) return false;
      this.body = again;
    }
    this.retries++;
    this.answer.upstreamRetries = this.retries;
    this.rt.metrics.upstreamRetry(this.plan.cluster.name);
    const waitMs = jittered(
      backoffDelay(this.retries, { firstMs: policy.backoffMs, maxMs: policy.backoffMs * 10 }),
    );
    const failed = this.answer.endpoint ?? this.plan.endpoint;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      // The route deadline may have answered meanwhile (finish() clears this timer, but it may be running).
      if (!this.finished) this.attempt(nextEndpoint(this.rt, this.plan, failed) ?? failed);
    }, waitMs);
    return true;
  }

  onUpstreamCall(call: UpstreamCall): void {
    this.exchange = call;
    if (this.answer.logged) this.answer.requestId = call.requestId;
  }

  /** The traceparent sent upstream: the proxy's span as the parent (tracing on), else none of ours. */
  traceparent(): string | undefined {
    const trace = this.answer.trace;
    return trace === undefined ? undefined : traceparentOf(trace);
  }

  private release(): void {
    if (this.sharing) {
      this.sharing = false;
      this.request.upstreamShare!.give();
    }
    const key = this.activeKey;
    if (key === undefined) return;
    this.activeKey = undefined;
    const active = this.rt.activeByEndpoint;
    const n = (active.get(key) ?? 1) - 1;
    if (n === 0) active.delete(key);
    else active.set(key, n);
  }

  finish(): void {
    this.finished = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    if (this.routeDeadline !== undefined) cancel(this.routeDeadline);
    if (this.backendDeadline !== undefined) cancel(this.backendDeadline);
  }

  timeout(): void {
    if (this.finished) return;
    this.finish();
    if (this.gate !== undefined) {
      // The request itself did not arrive in time (no upstream was asked yet): the client's timeout, 408.
      this.gate.cancel();
      this.answer.flag = 'request_timeout';
      this.answer.abortStatus = 408;
      this.res.abort(408);
      return;
    }
    this.answer.flag = 'upstream_timeout';
    this.rt.metrics.upstreamError(this.plan.cluster.name, 'timeout');
    this.cancel();
    respondLocally(this.res, 504, this.closing);
  }

  /** `timeouts.backendRequest` passed with no response head: the route's retry policy tries again, else 504. */
  private attemptTimedOut(): void {
    if (this.finished) return;
    if (this.plan.action.retry !== undefined && !this.responded) {
      this.exchange?.cancel();
      this.exchange = undefined;
      this.release();
      if (this.retryLater()) return;
    }
    this.timeout();
  }

  cancel(): void {
    this.release();
    this.exchange?.cancel();
  }

  /** The body passed its limit while it streamed in: 413 (or a cut response), and the upstream exchange ends. */
  bodyTooLarge(): void {
    if (this.finished) return;
    this.finish();
    this.gate?.cancel();
    this.cancel();
    this.answer.flag = 'request_body_too_large';
    if (!this.res.headersSent) this.answer.abortStatus = 413;
    this.res.abort(413);
  }

  clientClosed(): void {
    this.gate?.cancel();
    if (!this.res.writableFinished) {
      this.answer.flag ??= 'client_disconnect';
      this.cancel();
    }
    this.finish();
  }

  onUpstreamHead(status: number, head: UpstreamHead, alone: boolean): void {
    if (this.backendDeadline !== undefined) cancel(this.backendDeadline);
    // A status the route retries: this answer is dropped (its exchange cancelled) and the request sent again.
    if (this.plan.action.retry?.codes.includes(status) === true && this.retryLater()) {
      this.exchange?.cancel();
      this.exchange = undefined;
      this.release();
      return;
    }
    this.responded = true;
    if (this.finished) {
      this.exchange?.cancel();
      return;
    }
    try {
      this.writeResponseHead(status, head);
      // A streaming client (gRPC server streaming, server-sent events) waits for the head, not the first bytes.
      if (alone) this.res.sendHead();
    } catch (error) {
      // A header Node will not send (bad characters from a filter): fail this request only.
      this.rt.options.log.warn(`upstream response refused: ${(error as Error).message}`);
      this.rt.metrics.upstreamError(this.plan.cluster.name, 'invalid_response');
      this.answer.flag = 'invalid_upstream_response';
      this.finish();
      this.cancel();
      respondLocally(this.res, 502, this.closing);
    }
  }

  private writeResponseHead(status: number, head: UpstreamHead): void {
    const serviceMs = Math.round(performance.now() - this.startedAt);
    this.answer.upstreamServiceTimeMs = serviceMs;
    const close = this.closing || this.rt.draining;
    const modifiers = this.plan.responseModifiers;
    const extra = this.plan.responseLines;
    const res = this.res;
    if (modifiers.length === 0 && extra === undefined) {
      // Fastest: an HTTP/1.1 upstream's own lines, as they came, to an HTTP/1.1 client, plus ours.
      const passed =
        res.writeHeadText !== undefined && head instanceof ResponseHead ? head.passThrough() : undefined;
      if (passed !== undefined) {
        const lines = `${passed.lines}server: portico\r\nx-portico-upstream-service-time: ${serviceMs}\r\n`;
        res.writeHeadText!(status, lines, passed.hasLength, passed.hasDate, close);
        return;
      }
      // Fast: the upstream's header lines as they came (order and duplicates kept), plus ours.
      const lines = hopByHopFree(head.rawHeaders, DROP_FROM_RESPONSE);
      lines.push('server', 'portico', 'x-portico-upstream-service-time', String(serviceMs));
      if (close) lines.push('connection', 'close');
      res.writeHead(status, lines);
      return;
    }
    const headers = responseHeaders(head.rawHeaders);
    for (const m of modifiers) applyHeaderModifier(headers, m);
    headers.server = 'portico';
    headers['x-portico-upstream-service-time'] = String(serviceMs);
    if (close) headers.connection = 'close';
    const lines = flatHeaders(headers);
    // An access check's lines (a refreshed session cookie) go as they are, one line each.
    if (extra !== undefined) lines.push(...extra);
    // Filters may have set values Node would refuse to send: checked here (a throw becomes a 502).
    res.writeHead(status, lines, true);
  }

  onUpstreamData(chunk: Buffer): boolean {
    if (this.finished) return true;
    // Backpressure: stop reading from the upstream while the client is slower (resumed on drain).
    return this.res.write(chunk);
  }

  resume(): void {
    this.exchange?.resume();
  }

  onUpstreamEnd(last: Buffer | undefined, trailers?: string[]): void {
    this.release();
    if (this.finished) return;
    this.finish();
    this.res.end(last, trailers === undefined ? undefined : forwardableTrailers(trailers));
  }

  onUpstreamError(error: UpstreamError): void {
    this.release();
    if (this.finished) return;
    // The upstream died mid-body: the client must see a broken response, not a short one.
    if (this.responded) {
      this.finish();
      this.answer.flag = 'upstream_reset';
      this.res.destroy();
      return;
    }
    // A pooled connection the backend closed while idle: safe to retry a request without a body.
    if (this.retriesLeft > 0 && this.bodyless && error.kind === 'reset') {
      const next = nextEndpoint(this.rt, this.plan, this.answer.endpoint ?? this.plan.endpoint);
      if (next !== undefined) {
        this.retriesLeft--;
        this.attempt(next);
        return;
      }
    }
    // No answer at all (refused, reset, unreachable): the route's retry policy sends it again.
    if (CONNECTION_FAILURES.has(error.kind) && this.retryLater()) {
      this.exchange = undefined;
      return;
    }
    this.finish();
    this.answer.flag = UPSTREAM_FLAG[error.kind];
    this.rt.metrics.upstreamError(this.plan.cluster.name, error.kind);
    // An upstream that stopped taking the body timed out; every other failure is a bad gateway.
    respondLocally(this.res, error.kind === 'send_timeout' ? 504 : 502, this.closing);
  }
}

/** Per request: hears the response's drain and close (metrics, the access log, cancelling the upstream exchange). */
class Answer implements ResponseListener {
  routeName = '-';
  forwarding: Forwarding | undefined = undefined;
  /** This request goes to the access log (which is on, and sampled it). */
  readonly logged: boolean;
  flag: ResponseFlag | undefined = undefined;
  /** Why a policy refused the request (the access log's, never a credential). */
  accessReason: string | undefined = undefined;
  /** The response closed (sent, or the client went away). */
  closed = false;
  /** Query parameters whose values the access log line hides (credentials a policy reads). */
  credentialQuery: ReadonlySet<string> | undefined = undefined;
  endpoint: Endpoint | undefined = undefined;
  upstreamServiceTimeMs: number | undefined = undefined;
  upstreamRetries: number | undefined = undefined;
  requestId: string | undefined = undefined;
  /** The status of an answer sent by aborting the exchange (the response object never wrote a head). */
  abortStatus: number | undefined = undefined;
  /** This request's trace (tracing on), sampled or not. */
  trace: TraceContext | undefined = undefined;
  constructor(
    readonly rt: ProxyRuntime,
    readonly listener: string,
    readonly req: ClientRequest,
    readonly res: ProxyResponse,
    readonly started: number,
  ) {
    this.logged = rt.accessLog?.sampled() === true;
  }

  onResponseDrain(): void {
    this.forwarding?.resume();
  }

  onResponseClose(): void {
    this.closed = true;
    // The client went away (or we gave up): cancel the upstream request.
    this.forwarding?.clientClosed();
    const metrics = this.rt.metrics;
    const seconds = (performance.now() - this.started) / 1000;
    metrics.requestFinished();
    metrics.request(this.listener, this.routeName, this.status(), seconds);
    const traced = this.trace?.sampled === true;
    if (!this.logged && !traced) return;
    recordTelemetry(this.rt, this.logged, traced ? this.trace : undefined, this.started, () =>
      this.entry(seconds * 1000),
    );
  }

  /** The status the client got: 0 when no response head was sent (a client gone first, an abort). */
  private status(): number {
    return this.res.headersSent ? this.res.statusCode : (this.abortStatus ?? 0);
  }

  private entry(durationMs: number): AccessLogEntry {
    const { req, res, endpoint } = this;
    return {
      startMs: Date.now() - durationMs,
      method: req.method,
      authority: req.host,
      path: this.credentialQuery === undefined ? req.url : redactedPath(req.url, this.credentialQuery),
      protocol: res.protocol,
      status: this.status(),
      flag: this.flag,
      bytesReceived: req.body?.received ?? 0,
      bytesSent: res.bodyBytesSent,
      durationMs,
      upstreamHost: endpoint === undefined ? undefined : endpointKey(endpoint),
      upstreamServiceTimeMs: this.upstreamServiceTimeMs,
      upstreamRetries: this.upstreamRetries,
      routeName: this.routeName,
      listener: this.listener,
      requestId: this.requestId,
      clientAddress: req.client.address,
      accessReason: this.accessReason,
    };
  }
}

/** Failures where no answer came: what a retry policy retries besides its status codes (RetryConnectionError). */
const CONNECTION_FAILURES: ReadonlySet<UpstreamErrorKind> = new Set<UpstreamErrorKind>([
  'refused',
  'connect_timeout',
  'error',
  'reset',
]);

const UPSTREAM_FLAG: Record<UpstreamErrorKind, ResponseFlag> = {
  refused: 'upstream_connect_failure',
  connect_timeout: 'upstream_connect_failure',
  error: 'upstream_connect_failure',
  reset: 'upstream_reset',
  invalid_response: 'invalid_upstream_response',
  send_timeout: 'upstream_timeout',
};

export function handleRequest(
  rt: ProxyRuntime,
  listener: ListenerContext,
  req: ClientRequest,
  res: ProxyResponse,
): void {
  // Who the client is, decided once: everything after reads it (client-address.ts).
  listener.findClient?.(req);
  const listenerName = listener.name;
  const snapshot = rt.snapshot;
  rt.metrics.requestStarted();
  const answer = new Answer(rt, listenerName, req, res, performance.now());
  if (rt.tracing !== undefined) answer.trace = requestTrace(rt.tracing, req.rawHeaders);
  res.listener = answer;
  // While draining, every response asks the client to go elsewhere for its next request.
  const close = rt.draining || listener.closing;
  // The listener's own filters first (none: straight on); routes are matched once, on what they leave.
  if (snapshot === undefined || !snapshot.filtered) {
    routeRequest({ rt, listener, req, res, answer, close }, snapshot);
    return;
  }
  runListenerFilters(req, {
    snapshot,
    listenerName,
    https: listener.proto === 'https',
    reach: (s) => authorizationReach(rt, s),
    count: rt.metrics.accessDecision,
    next: (filtered) => {
      if (!answer.closed) routeRequest({ rt, listener, req: filtered, res, answer, close }, snapshot);
    },
    refuse: (refusal) => {
      if (!answer.closed) refuse({ rt, listener, req, res, answer, close }, refusal);
    },
  });
}

/** Matches the request's route and runs the route's access checks (reading the body they need), then acts. */
function routeRequest(exchange: Exchange, snapshot: Snapshot | undefined): void {
  const { rt, listener, req, answer } = exchange;
  const plan = resolveRequest(rt, snapshot, listener.name, listener.proto, req);
  answer.routeName = plan.routeName;
  const access = plan.access;
  if (access === undefined) {
    limitThenAct(exchange, plan);
    return;
  }
  answer.credentialQuery = credentialQueryOf(access.policies);
  const run = (): void =>
    checkAccess(
      access.policies,
      access.request,
      rt.metrics.accessDecision,
      (settled) => {
        // The client may have gone while the checks ran: nothing is left to answer.
        if (!answer.closed) passOrRefuse(exchange, plan, settled);
      },
      access.reach,
    );
  const bodyBytes = bodyBytesOf(access.policies);
  if (bodyBytes === 0 || req.body === null) {
    run();
    return;
  }
  // A step reads the body (an authorization service is sent it): read up to its bound first, replayed upstream.
  void bufferedBody(req.body, bodyBytes).then((buffered) => {
    if (answer.closed) return;
    if (buffered === undefined) {
      answer.flag = 'access_denied';
      answer.accessReason = `body larger than the ${bodyBytes} bytes an access check reads`;
      answer.abortStatus = 413;
      exchange.res.abort(413);
      return;
    }
    access.request.body = buffered.bytes;
    exchange.body = buffered.replay;
    run();
  });
}

/** One request being answered, as the steps after routing share it. */
interface Exchange {
  rt: ProxyRuntime;
  listener: ListenerContext;
  req: ClientRequest;
  res: ProxyResponse;
  answer: Answer;
  /** Ask the client to close the connection (draining). */
  close: boolean;
  /** The body the backend gets when an access check read the client's (else the client's own stream). */
  body?: RequestBody;
}

/** An access check's refusal answers the client (its service's own body, when it gave one). */
function refuse(exchange: Exchange, refusal: AccessVerdict & { allow: false }): void {
  exchange.answer.flag = 'access_denied';
  exchange.answer.accessReason = `${refusal.policy} ${refusal.rule}: ${refusal.reason}`;
  const body = refusal.body;
  if (body !== undefined) respondWithBody(exchange.res, { ...refusal, body }, exchange.close);
  else respondLocally(exchange.res, refusal.status, exchange.close, undefined, refusal.headers);
}

/** A refusal answers; an allowance adds its upstream header changes and acts. */
function passOrRefuse(exchange: Exchange, plan: Plan, settled: Settled): void {
  if (!settled.allow) {
    refuse(exchange, settled.refusal);
    return;
  }
  if (plan.kind === 'forward' && settled.upstream !== undefined) {
    // After the route's own filters: what a policy removes (a credential) stays removed.
    plan.requestModifiers = [...plan.requestModifiers, settled.upstream];
    plan.configuredRequest = true;
  }
  if (plan.kind === 'forward' && settled.responseHeaders.length > 0)
    plan.responseLines = settled.responseHeaders;
  if (plan.kind === 'forward') plan.target = withoutQueryParameters(plan.target, settled.removeQuery);
  limitThenAct(exchange, plan);
}

/**
 * The route's rate limits (after its access policies: a limit keyed by a JWT claim reads the verified one), then
 * its action. A lease from another process (the primary, Redis) is waited for; the client may leave meanwhile.
 */
function limitThenAct(exchange: Exchange, plan: Plan): void {
  const rules = plan.route?.rateLimits;
  if (rules === undefined || rules.length === 0) {
    act(exchange, plan);
    return;
  }
  const { rt, req, answer } = exchange;
  const decision = rt.rateLimits.check(rules, req);
  if (!(decision instanceof Promise)) {
    actOrRefuse(exchange, plan, decision);
    return;
  }
  decision.then(
    (r) => {
      if (!answer.closed) actOrRefuse(exchange, plan, r);
    },
    (error: Error) => {
      rt.options.log.error(`rate limit: ${error.message}`);
      if (!answer.closed) respondLocally(exchange.res, 500, true);
    },
  );
}

/** Goes on with a request its rate limits let through (a forwarded one told its standing), or answers 429. */
function actOrRefuse(exchange: Exchange, plan: Plan, decision: RateDecision): void {
  if (decision.allowed) {
    if (plan.kind === 'forward')
      plan.responseLines = [...(plan.responseLines ?? []), ...rateStandingLines(decision)];
    act(exchange, plan);
    return;
  }
  exchange.answer.flag = 'rate_limited';
  // A body not read is not waited for: the connection closes after the answer.
  const close = exchange.close || exchange.req.body !== null;
  respondLocally(exchange.res, 429, close, undefined, rateLimitedLines(decision));
}

/** The route's action: a local answer, a redirect, or forwarding. */
function act(exchange: Exchange, plan: Plan): void {
  const { rt, listener, req, res, answer, close } = exchange;
  if (plan.kind === 'local') {
    answer.flag = plan.flag;
    respondLocally(res, plan.status, close, undefined, plan.headers);
    return;
  }
  if (plan.kind === 'redirect') {
    respondLocally(res, plan.status, close, plan.location);
    return;
  }
  const maxBody = plan.route.maxRequestBodyBytes ?? listener.maxRequestBodyBytes;
  if (maxBody > 0 && req.body !== null && req.contentLength > maxBody) {
    // Refused on its content-length, before a byte of it is read.
    answer.flag = 'request_body_too_large';
    answer.abortStatus = 413;
    res.abort(413);
    return;
  }
  const forwarding = new Forwarding(rt, plan, req, res, close, listener.proto, answer, exchange.body);
  answer.forwarding = forwarding;
  if (maxBody > 0 && req.body !== null)
    req.body.limit = { maxBytes: maxBody, exceeded: () => forwarding.bodyTooLarge() };
  forwarding.start();
}

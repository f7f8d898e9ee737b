// RequestMirror: a copy of a forwarded request sent to another cluster, its answer read and thrown away. A copy
// never holds up, slows or changes the request it copies: it has its own deadline, no share of the client's
// connection, and a body only when the proxy holds the whole body already (see BodyGate).
import { performance } from 'node:perf_hooks';
import { DEFAULT_ROUTE_TIMEOUT_MS } from '../ir/fleet-config.js';
import { cancel, Deadline, schedule } from './deadlines.js';
import type { ClientRequest, RequestBody } from './exchange.js';
import { type ForwardPlan, upstreamHeaders } from './routing/resolve.js';
import type { ProxyRuntime } from './runtime.js';
import type { MirrorOutcome } from './telemetry/metrics.js';
import { ReplayBody } from './upstream/body-gate.js';
import { sendable } from './upstream/http1-head.js';
import type { AttemptSink, UpstreamAttempt, UpstreamCall } from './upstream/upstream.js';
import type { HeaderMap } from './wire/headers.js';

class MirrorExchange implements AttemptSink, UpstreamAttempt {
  private call: UpstreamCall | undefined = undefined;
  private done = false;
  private readonly deadline = new Deadline(this);

  constructor(
    private readonly rt: ProxyRuntime,
    readonly plan: ForwardPlan,
    readonly request: ClientRequest,
    readonly proto: 'http' | 'https',
    readonly headers: HeaderMap | undefined,
    readonly body: RequestBody | null,
    private readonly parent: string | undefined,
  ) {}

  send(): void {
    this.rt.mirrorsInFlight++;
    const timeoutMs = this.plan.action.timeoutMs;
    // A route without a timeout still bounds its copies: a mirror that never answers holds a connection.
    schedule(this.deadline, timeoutMs > 0 ? timeoutMs : DEFAULT_ROUTE_TIMEOUT_MS, performance.now());
    this.rt.upstreams[this.plan.protocol].send(this.plan.endpoint, this, this);
  }

  traceparent(): string | undefined {
    return this.parent;
  }

  onUpstreamCall(call: UpstreamCall): void {
    this.call = call;
  }

  onUpstreamHead(): void {}

  onUpstreamData(): boolean {
    return true;
  }

  onUpstreamEnd(): void {
    this.end('answered');
  }

  onUpstreamError(): void {
    this.end('failed');
  }

  timeout(): void {
    if (this.done) return;
    this.call?.cancel();
    this.end('failed');
  }

  private end(outcome: MirrorOutcome): void {
    if (this.done) return;
    this.done = true;
    this.rt.mirrorsInFlight--;
    cancel(this.deadline);
    this.rt.metrics.upstreamMirror(this.plan.cluster.name, outcome);
  }
}

/**
 * Sends the plan's mirror copies of a request whose body is `body` as the handler holds it: a body that is not
 * whole (it outgrew the buffer and streams on) cannot be copied, and past the copies in flight allowed none is
 * sent: such mirrors are skipped and counted.
 */
export function sendMirrors(
  rt: ProxyRuntime,
  mirrors: readonly ForwardPlan[],
  request: ClientRequest,
  proto: 'http' | 'https',
  body: RequestBody | null,
  traceparent: string | undefined,
): void {
  for (const plan of mirrors) {
    const copy = body === null ? null : body instanceof ReplayBody ? body.again() : undefined;
    if (copy === undefined || rt.mirrorsInFlight >= rt.options.limits.maxMirrorsInFlight) {
      rt.metrics.upstreamMirror(plan.cluster.name, 'skipped');
      continue;
    }
    const headers =
      plan.requestModifiers.length > 0
        ? upstreamHeaders(request, plan, proto, false, traceparent)
        : undefined;
    if (plan.configuredRequest && !sendable(plan.target, headers, plan.hostRewrite)) {
      rt.metrics.upstreamMirror(plan.cluster.name, 'skipped');
      continue;
    }
    new MirrorExchange(rt, plan, request, proto, headers, copy, traceparent).send();
  }
}

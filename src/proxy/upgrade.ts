// WebSocket (and any HTTP/1.1 Upgrade) pass-through: route like a request, then splice the two sockets. The
// access log and tracing see a tunnel once it closes: its status (101 when it opened), bytes and lifetime.
import { request as httpRequest, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import {
  type AccessVerdict,
  checkAccess,
  credentialQueryOf,
  withoutQueryParameters,
} from './access/pipeline.js';
import type { ClientRequest, ListenerContext } from './exchange.js';
import { runListenerFilters } from './routing/listener-filters.js';
import { authorizationReach, type Plan, resolveRequest, upstreamHeaders } from './routing/resolve.js';
import { endpointKey } from './routing/snapshot.js';
import type { ProxyRuntime } from './runtime.js';
import { type AccessLogEntry, type ResponseFlag, redactedPath } from './telemetry/access-log.js';
import { recordTelemetry } from './telemetry/record.js';
import { type TraceContext, traceparentOf } from './telemetry/trace-context.js';
import { requestTrace } from './telemetry/tracing.js';
import { responseHeaders } from './wire/headers.js';

/** How long an upgrade socket the proxy ended is kept for the client to read the answer. */
const LINGER_MS = 1000;

function rawResponse(status: number, rawHeaders: string[]): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
  for (let i = 0; i < rawHeaders.length; i += 2) head += `${rawHeaders[i]}: ${rawHeaders[i + 1]}\r\n`;
  return `${head}\r\n`;
}

/** What a tunnel (or a refused upgrade) ends with, for its access log line and span. */
interface UpgradeOutcome {
  started: number;
  /** 0 until an answer is sent. */
  status: number;
  flag: ResponseFlag | undefined;
  routeName: string;
  upstreamHost: string | undefined;
  requestId: string | undefined;
  /** Why an AccessPolicy refused the upgrade. */
  accessReason?: string;
  /** Query parameters whose values the access log line hides (credentials a policy reads). */
  credentialQuery?: ReadonlySet<string>;
}

function reject(socket: Duplex, outcome: UpgradeOutcome, status: number, extra: string[] = []): void {
  outcome.status = status;
  const headers = ['server', 'portico', 'content-length', '0', 'connection', 'close', ...extra];
  socket.end(rawResponse(status, headers));
}

/** Logs and traces the upgrade when its client socket closes (when the request is sampled for either). */
function recordOnClose(
  rt: ProxyRuntime,
  listener: ListenerContext,
  req: ClientRequest,
  socket: Duplex,
  outcome: UpgradeOutcome,
  trace: TraceContext | undefined,
): void {
  const logged = rt.accessLog?.sampled() === true;
  const traced = trace?.sampled === true;
  if (!logged && !traced) return;
  socket.once('close', () => {
    const durationMs = performance.now() - outcome.started;
    // A TLS or plain socket: its counts are the tunnel's bytes each way, heads included.
    const counted = socket as Partial<Pick<Socket, 'bytesRead' | 'bytesWritten'>>;
    const entry = (): AccessLogEntry => ({
      startMs: Date.now() - durationMs,
      method: req.method,
      authority: req.host,
      path: outcome.credentialQuery === undefined ? req.url : redactedPath(req.url, outcome.credentialQuery),
      protocol: 'HTTP/1.1',
      status: outcome.status,
      flag: outcome.flag ?? (outcome.status === 0 ? ('client_disconnect' as const) : undefined),
      bytesReceived: counted.bytesRead ?? 0,
      bytesSent: counted.bytesWritten ?? 0,
      durationMs,
      upstreamHost: outcome.upstreamHost,
      upstreamServiceTimeMs: undefined,
      upstreamRetries: undefined,
      routeName: outcome.routeName,
      listener: listener.name,
      requestId: outcome.requestId,
      clientAddress: req.client.address,
      accessReason: outcome.accessReason,
    });
    recordTelemetry(rt, logged, traced ? trace : undefined, outcome.started, entry);
  });
}

export function handleUpgrade(
  rt: ProxyRuntime,
  listener: ListenerContext,
  req: ClientRequest,
  socket: Duplex,
  head: Buffer,
): void {
  // The tunnel's forwarding headers and log line name the client its listener's policy finds.
  listener.findClient?.(req);
  socket.on('error', () => socket.destroy());
  // Once the proxy's side is ended and flushed (refused or declined upgrade), the client gets a short grace to
  // read it and close; its further bytes are dropped. Without this a client that never closes keeps the socket.
  socket.once('finish', () => {
    socket.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });
  const outcome: UpgradeOutcome = {
    started: performance.now(),
    status: 0,
    flag: undefined,
    routeName: '-',
    upstreamHost: undefined,
    requestId: undefined,
  };
  const trace = rt.tracing === undefined ? undefined : requestTrace(rt.tracing, req.rawHeaders);
  recordOnClose(rt, listener, req, socket, outcome, trace);
  // The listener's own filters first, as for any request (routing/listener-filters.ts).
  const snapshot = rt.snapshot;
  runListenerFilters(req, {
    snapshot,
    listenerName: listener.name,
    https: listener.proto === 'https',
    reach: (s) => authorizationReach(rt, s),
    count: rt.metrics.accessDecision,
    next: (filtered) => {
      if (!socket.destroyed) routeUpgrade(rt, listener, filtered, socket, head, outcome, trace);
    },
    refuse: (refusal) => {
      if (!socket.destroyed) refuseUpgrade(rt, listener.name, '-', socket, outcome, refusal);
    },
  });
}

/** An upgrade a listener filter or a route's policy refused: counted, logged with its reason, answered. */
function refuseUpgrade(
  rt: ProxyRuntime,
  listenerName: string,
  routeName: string,
  socket: Duplex,
  outcome: UpgradeOutcome,
  refusal: AccessVerdict & { allow: false },
): void {
  rt.metrics.request(listenerName, routeName, refusal.status, 0);
  outcome.flag = 'access_denied';
  outcome.accessReason = `${refusal.policy} ${refusal.rule}: ${refusal.reason}`;
  reject(socket, outcome, refusal.status, refusal.headers);
}

/** The upgrade's route, and its access checks, then the tunnel. */
function routeUpgrade(
  rt: ProxyRuntime,
  listener: ListenerContext,
  req: ClientRequest,
  socket: Duplex,
  head: Buffer,
  outcome: UpgradeOutcome,
  trace: TraceContext | undefined,
): void {
  const plan = resolveRequest(rt, rt.snapshot, listener.name, listener.proto, req);
  outcome.routeName = plan.routeName;
  const access = plan.access;
  if (access === undefined) {
    tunnel(rt, listener, req, socket, head, outcome, trace, plan);
    return;
  }
  const credentialQuery = credentialQueryOf(access.policies);
  if (credentialQuery !== undefined) outcome.credentialQuery = credentialQuery;
  checkAccess(
    access.policies,
    access.request,
    rt.metrics.accessDecision,
    (settled) => {
      if (socket.destroyed) return;
      if (!settled.allow) {
        refuseUpgrade(rt, listener.name, plan.routeName, socket, outcome, settled.refusal);
        return;
      }
      if (plan.kind === 'forward' && settled.upstream !== undefined)
        plan.requestModifiers = [...plan.requestModifiers, settled.upstream];
      if (plan.kind === 'forward') plan.target = withoutQueryParameters(plan.target, settled.removeQuery);
      tunnel(rt, listener, req, socket, head, outcome, trace, plan);
    },
    access.reach,
  );
}

/** The upgrade a route's policies let pass: refused, redirected, or tunnelled to the backend. */
function tunnel(
  rt: ProxyRuntime,
  listener: ListenerContext,
  req: ClientRequest,
  socket: Duplex,
  head: Buffer,
  outcome: UpgradeOutcome,
  trace: TraceContext | undefined,
  plan: Plan,
): void {
  rt.metrics.request(listener.name, plan.routeName, plan.kind === 'forward' ? 101 : plan.status, 0);
  if (plan.kind !== 'forward') {
    if (plan.kind === 'local') outcome.flag = plan.flag;
    reject(socket, outcome, plan.status, plan.kind === 'redirect' ? ['location', plan.location] : []);
    return;
  }

  const headers = upstreamHeaders(req, plan, listener.proto, true, trace && traceparentOf(trace));
  outcome.upstreamHost = endpointKey(plan.endpoint);
  outcome.requestId = headers['x-request-id'] as string | undefined;
  const up = httpRequest({
    host: plan.endpoint.address,
    port: plan.endpoint.port,
    method: req.method,
    path: plan.target,
    headers,
    agent: false,
    setHost: false,
  });
  const timer =
    plan.action.timeoutMs > 0
      ? setTimeout(() => {
          up.destroy();
          outcome.flag = 'upstream_timeout';
          reject(socket, outcome, 504);
        }, plan.action.timeoutMs)
      : undefined;
  socket.on('close', () => up.destroy());
  up.on('error', () => {
    clearTimeout(timer);
    rt.metrics.upstreamError(plan.cluster.name, 'upgrade');
    if (!socket.writable) return;
    outcome.flag = 'upstream_connect_failure';
    reject(socket, outcome, 502);
  });
  // The backend declined the upgrade: relay its ordinary response and close.
  up.on('response', (upRes) => {
    clearTimeout(timer);
    const kept = Object.entries(responseHeaders(upRes.rawHeaders)).flatMap(([name, value]) =>
      (Array.isArray(value) ? value : [value]).flatMap((v) => [name, v]),
    );
    // Hop-by-hop headers dropped, so the body is delimited by the close.
    outcome.status = upRes.statusCode ?? 502;
    socket.write(rawResponse(outcome.status, [...kept, 'connection', 'close']));
    upRes.pipe(socket);
  });
  up.on('upgrade', (upRes, upSocket, upHead) => {
    clearTimeout(timer);
    upSocket.on('error', () => socket.destroy());
    socket.on('error', () => upSocket.destroy());
    // WebSocket has its own close handshake, so a half-close on either side ends the whole tunnel.
    upSocket.on('end', () => socket.destroy());
    socket.on('end', () => upSocket.destroy());
    upSocket.on('close', () => socket.destroy());
    socket.on('close', () => upSocket.destroy());
    rt.tunnels.add(socket);
    socket.on('close', () => rt.tunnels.delete(socket));
    outcome.status = 101;
    socket.write(rawResponse(101, upRes.rawHeaders));
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) upSocket.write(head);
    upSocket.pipe(socket);
    socket.pipe(upSocket);
  });
  up.end();
}

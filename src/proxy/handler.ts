// Answers one HTTP request: local responses, redirects, and forwarding with streaming in both directions,
// route/backend timeouts, client-abort cancellation and the DESIGN.md §6 status codes.
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { applyHeaderModifier, responseHeaders } from './headers.js';
import { type ForwardPlan, resolveRequest } from './resolve.js';
import type { ListenerContext, ProxyRuntime } from './runtime.js';
import { endpointKey } from './snapshot.js';

export function respondLocally(res: ServerResponse, status: number, extra?: Record<string, string>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { ...extra, 'content-length': '0' });
  res.end();
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function errorKind(error: NodeJS.ErrnoException): string {
  if (error.code === 'ECONNREFUSED') return 'refused';
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return 'reset';
  return (error.code ?? 'error').toLowerCase();
}

function forward(
  rt: ProxyRuntime,
  plan: ForwardPlan,
  req: IncomingMessage,
  res: ServerResponse,
  closing: boolean,
): void {
  const bodyless = !hasBody(req);
  let finished = false;
  let upstream: ReturnType<typeof httpRequest> | undefined;
  let backendTimer: NodeJS.Timeout | undefined;

  const finish = (): void => {
    finished = true;
    clearTimeout(routeTimer);
    clearTimeout(backendTimer);
  };
  const timeout = (): void => {
    if (finished) return;
    finish();
    rt.metrics.upstreamError(plan.cluster.name, 'timeout');
    upstream?.destroy();
    respondLocally(res, 504);
  };
  const routeTimer = setTimeout(timeout, plan.action.timeoutMs);

  // The client went away (or we gave up): cancel the upstream request.
  res.on('close', () => {
    if (!res.writableFinished) upstream?.destroy();
    finish();
  });

  const attempt = (endpoint: typeof plan.endpoint, retriesLeft: number): void => {
    const key = endpointKey(endpoint);
    rt.activeByEndpoint.set(key, (rt.activeByEndpoint.get(key) ?? 0) + 1);
    const sentAt = performance.now();
    const up = httpRequest({
      host: endpoint.address,
      port: endpoint.port,
      method: req.method,
      path: plan.target,
      headers: plan.headers,
      agent: rt.agent,
      setHost: false,
    });
    upstream = up;
    up.on('close', () => {
      const n = (rt.activeByEndpoint.get(key) ?? 1) - 1;
      if (n === 0) rt.activeByEndpoint.delete(key);
      else rt.activeByEndpoint.set(key, n);
    });
    if (plan.action.backendTimeoutMs !== undefined) {
      clearTimeout(backendTimer);
      backendTimer = setTimeout(timeout, plan.action.backendTimeoutMs);
    }
    up.on('response', (upRes) => {
      clearTimeout(backendTimer);
      if (finished) {
        upRes.resume();
        return;
      }
      const headers = responseHeaders(upRes.rawHeaders);
      for (const m of plan.responseModifiers) applyHeaderModifier(headers, m);
      headers.server = 'portico';
      headers['x-portico-upstream-service-time'] = String(Math.round(performance.now() - sentAt));
      if (rt.draining || closing) headers.connection = 'close';
      res.writeHead(upRes.statusCode ?? 502, headers);
      upRes.pipe(res);
      upRes.on('end', finish);
      // The upstream died mid-body: the client must see a broken response, not a short one.
      upRes.on('close', () => {
        if (!upRes.complete) res.destroy();
      });
    });
    up.on('error', (error: NodeJS.ErrnoException) => {
      if (finished) return;
      // A pooled connection the backend closed while idle: safe to retry a request without a body.
      const next = retriesLeft > 0 && bodyless && up.reusedSocket ? plan.nextEndpoint() : undefined;
      if (next !== undefined && !res.headersSent) {
        attempt(next, retriesLeft - 1);
        return;
      }
      finish();
      rt.metrics.upstreamError(plan.cluster.name, errorKind(error));
      respondLocally(res, 502);
    });
    if (bodyless) up.end();
    else req.pipe(up);
  };
  attempt(plan.endpoint, 2);
}

export function handleRequest(
  rt: ProxyRuntime,
  listener: ListenerContext,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const listenerName = listener.name;
  const started = performance.now();
  const snapshot = rt.snapshot;
  rt.metrics.requestStarted();
  let routeName = '-';
  res.on('close', () => {
    rt.metrics.requestFinished();
    rt.metrics.request(listenerName, routeName, res.statusCode, (performance.now() - started) / 1000);
  });
  res.setHeader('server', 'portico');
  // While draining, every response asks the client to go elsewhere for its next request.
  if (rt.draining || listener.closing) res.setHeader('connection', 'close');
  // Node truncates headers beyond maxHeadersCount (set one higher), so more than the limit means too many.
  if (req.rawHeaders.length > rt.options.limits.maxHeadersCount * 2) {
    respondLocally(res, 431);
    return;
  }
  const plan = resolveRequest(rt, snapshot, listenerName, listener.proto, req, false);
  routeName = plan.routeName;
  if (plan.kind === 'local') respondLocally(res, plan.status);
  else if (plan.kind === 'redirect') respondLocally(res, plan.status, { location: plan.location });
  else forward(rt, plan, req, res, listener.closing);
}

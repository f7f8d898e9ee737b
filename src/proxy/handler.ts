// Answers one HTTP request: local responses, redirects, and forwarding with streaming in both directions,
// route/backend timeouts, client-abort cancellation and the DESIGN.md §6 status codes.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { Endpoint } from '../ir/fleet-config.js';
import { applyHeaderModifier, DROP_FROM_RESPONSE, hopByHopFree, responseHeaders } from './headers.js';
import { type ForwardPlan, resolveRequest } from './resolve.js';
import type { ListenerContext, ProxyRuntime } from './runtime.js';
import { endpointKey } from './snapshot.js';

/** An empty-bodied answer from the proxy itself; `close` while draining or when the listener goes away. */
export function respondLocally(res: ServerResponse, status: number, close: boolean, location?: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers = ['server', 'portico', 'content-length', '0'];
  if (location !== undefined) headers.push('location', location);
  if (close) headers.push('connection', 'close');
  try {
    res.writeHead(status, headers);
  } catch {
    // Only a location built from odd request bytes can be refused: answer without it.
    res.writeHead(500, ['server', 'portico', 'content-length', '0']);
  }
  res.end();
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function errorKind(error: Error & { code?: string }): string {
  if (error.code === 'ECONNREFUSED') return 'refused';
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || error.code === 'UND_ERR_SOCKET')
    return 'reset';
  return (error.code ?? 'error').toLowerCase();
}

/** Header lines as strings (HTTP header bytes are latin1). */
function rawHeaderStrings(raw: Buffer[] | string[] | IncomingHttpHeaders | null | undefined): string[] {
  if (Array.isArray(raw)) return raw.map((h) => (typeof h === 'string' ? h : h.toString('latin1')));
  const flat: string[] = [];
  for (const [name, value] of Object.entries(raw ?? {})) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) flat.push(name, v);
  }
  return flat;
}

function forward(
  rt: ProxyRuntime,
  plan: ForwardPlan,
  req: IncomingMessage,
  res: ServerResponse,
  closing: boolean,
): void {
  const bodyless = !hasBody(req);
  // A client that resets mid-upload makes the body stream error; the upstream request is cancelled anyway.
  if (!bodyless) req.on('error', () => {});
  let finished = false;
  let controller: Dispatcher.DispatchController | undefined;
  let backendTimer: NodeJS.Timeout | undefined;

  const finish = (): void => {
    finished = true;
    clearTimeout(routeTimer);
    clearTimeout(backendTimer);
  };
  const cancel = (): void => {
    controller?.abort(new Error('cancelled by the proxy'));
  };
  const timeout = (): void => {
    if (finished) return;
    finish();
    rt.metrics.upstreamError(plan.cluster.name, 'timeout');
    cancel();
    respondLocally(res, 504, closing);
  };
  const routeTimer = setTimeout(timeout, plan.action.timeoutMs);

  // The client went away (or we gave up): cancel the upstream request.
  res.on('close', () => {
    if (!res.writableFinished) cancel();
    finish();
  });

  const writeResponseHead = (statusCode: number, raw: Parameters<typeof rawHeaderStrings>[0]): void => {
    const serviceTime = String(Math.round(performance.now() - startedAt));
    const close = closing || rt.draining;
    if (plan.responseModifiers.length === 0) {
      // Fast path: the upstream's header lines as they came (order and duplicates kept), plus ours.
      const lines = hopByHopFree(rawHeaderStrings(raw), DROP_FROM_RESPONSE);
      lines.push('server', 'portico', 'x-portico-upstream-service-time', serviceTime);
      if (close) lines.push('connection', 'close');
      res.writeHead(statusCode, lines);
      return;
    }
    const headers = responseHeaders(rawHeaderStrings(raw));
    for (const m of plan.responseModifiers) applyHeaderModifier(headers, m);
    headers.server = 'portico';
    headers['x-portico-upstream-service-time'] = serviceTime;
    if (close) headers.connection = 'close';
    res.writeHead(statusCode, headers);
  };
  let startedAt = 0;

  const attempt = (endpoint: Endpoint, retriesLeft: number): void => {
    const key = endpointKey(endpoint);
    rt.activeByEndpoint.set(key, (rt.activeByEndpoint.get(key) ?? 0) + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const n = (rt.activeByEndpoint.get(key) ?? 1) - 1;
      if (n === 0) rt.activeByEndpoint.delete(key);
      else rt.activeByEndpoint.set(key, n);
    };
    startedAt = performance.now();
    let responded = false;
    if (plan.action.backendTimeoutMs !== undefined) {
      clearTimeout(backendTimer);
      backendTimer = setTimeout(timeout, plan.action.backendTimeoutMs);
    }
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (finished) c.abort(new Error('cancelled by the proxy'));
      },
      onResponseStart(c, statusCode) {
        if (statusCode < 200) return; // interim (1xx) responses are not relayed
        clearTimeout(backendTimer);
        responded = true;
        if (finished) {
          c.abort(new Error('cancelled by the proxy'));
          return;
        }
        try {
          writeResponseHead(statusCode, c.rawHeaders);
        } catch (error) {
          // A header Node will not send (bad characters from the upstream or a filter): fail this request only.
          rt.options.log(`upstream response refused: ${(error as Error).message}`);
          rt.metrics.upstreamError(plan.cluster.name, 'invalid_response');
          finish();
          c.abort(new Error('invalid upstream response'));
          respondLocally(res, 502, closing);
        }
      },
      onResponseData(c, chunk) {
        // Backpressure: stop reading from the upstream while the client is slower.
        if (!res.write(chunk)) {
          c.pause();
          res.once('drain', () => c.resume());
        }
      },
      onResponseEnd() {
        release();
        finish();
        res.end();
      },
      onResponseError(_c, error: Error & { code?: string }) {
        release();
        if (finished) return;
        // The upstream died mid-body: the client must see a broken response, not a short one.
        if (responded) {
          finish();
          res.destroy();
          return;
        }
        // A pooled connection the backend closed while idle: safe to retry a request without a body.
        const next =
          retriesLeft > 0 && bodyless && errorKind(error) === 'reset' ? plan.nextEndpoint() : undefined;
        if (next !== undefined) {
          attempt(next, retriesLeft - 1);
          return;
        }
        finish();
        rt.metrics.upstreamError(plan.cluster.name, errorKind(error));
        respondLocally(res, 502, closing);
      },
    };
    try {
      rt.pools.get(endpoint).dispatch(
        {
          path: plan.target,
          method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
          headers: plan.headers,
          body: bodyless ? null : req,
        },
        handler,
      );
    } catch (error) {
      // Invalid header values (e.g. from a filter) are refused before anything is sent.
      release();
      finish();
      rt.metrics.upstreamError(plan.cluster.name, 'invalid_request');
      rt.options.log(`upstream request refused: ${(error as Error).message}`);
      respondLocally(res, 502, closing);
    }
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
  // While draining, every response asks the client to go elsewhere for its next request.
  const close = rt.draining || listener.closing;
  // Node truncates headers beyond maxHeadersCount (set one higher), so more than the limit means too many.
  if (req.rawHeaders.length > rt.options.limits.maxHeadersCount * 2) {
    respondLocally(res, 431, close);
    return;
  }
  const plan = resolveRequest(rt, snapshot, listenerName, listener.proto, req, false);
  routeName = plan.routeName;
  if (plan.kind === 'local') respondLocally(res, plan.status, close);
  else if (plan.kind === 'redirect') respondLocally(res, plan.status, close, plan.location);
  else forward(rt, plan, req, res, close);
}

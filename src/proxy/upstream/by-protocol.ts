// The HTTP/1.1 and h2c clients behind the one Upstream interface, each turning an attempt into its own request
// (one head string; an HTTP/2 header block) on its own pools; the handler picks one by the cluster's protocol.
import type { ClusterProtocol } from '../../ir/fleet-config.js';
import { upstreamHeaders } from '../routing/resolve.js';
import type { TlsUpstreamPools } from './backend-tls.js';
import { H2UpstreamExchange } from './h2c-exchange.js';
import { h2RequestHeaders } from './h2c-headers.js';
import type { H2EndpointPool } from './h2c-pool.js';
import { type EndpointPool, UpstreamExchange } from './http1.js';
import { type HeadOptions, requestHeadFromMap, requestHeadFromRaw } from './http1-head.js';
import type { UpstreamPools } from './pools.js';
import type { Upstream } from './upstream.js';

/** The cluster protocols an HTTP request is forwarded over (layer-4 clusters relay connections instead). */
export type HttpClusterProtocol = Exclude<ClusterProtocol, 'tcp' | 'udp'>;

/** An Upstream per HTTP cluster protocol. */
export type Upstreams = Readonly<Record<HttpClusterProtocol, Upstream>>;

/** HTTP/1.1 (over TLS under a BackendTLSPolicy): the head written as one string, from the client's raw lines when no filter changed them. */
export function http1Upstream(
  pools: UpstreamPools<EndpointPool>,
  tlsPools: TlsUpstreamPools<EndpointPool>,
): Upstream {
  return {
    send(endpoint, attempt, sink) {
      const { plan, request, headers } = attempt;
      const tls = plan.cluster.tls;
      const pool = tls === undefined ? pools.get(endpoint) : tlsPools.get(tls, endpoint);
      const options: HeadOptions = {
        method: request.method,
        target: plan.target,
        proto: attempt.proto,
        timeoutMs: plan.action.timeoutMs,
        hostRewrite: plan.hostRewrite,
        chunked: request.chunked,
        contentLength: request.contentLength,
        authority: pool.authority,
        traceparent: attempt.traceparent(),
      };
      const head =
        headers === undefined ? requestHeadFromRaw(request, options) : requestHeadFromMap(headers, options);
      const exchange = new UpstreamExchange(
        head,
        attempt.body,
        request.chunked,
        request.method === 'HEAD',
        sink,
      );
      sink.onUpstreamCall(exchange);
      pool.send(exchange);
    },
  };
}

/** h2c (h2 over TLS under a BackendTLSPolicy): a stream on a pooled session, its header block made from the forwarding headers. */
export function h2cUpstream(
  pools: UpstreamPools<H2EndpointPool>,
  tlsPools: TlsUpstreamPools<H2EndpointPool>,
): Upstream {
  return {
    send(endpoint, attempt, sink) {
      const { plan, request } = attempt;
      const tls = plan.cluster.tls;
      const headers =
        attempt.headers ?? upstreamHeaders(request, plan, attempt.proto, false, attempt.traceparent());
      const session = tls === undefined ? pools.get(endpoint) : tlsPools.get(tls, endpoint);
      const h2Headers = h2RequestHeaders(request.method, plan.target, headers, request, session.authority);
      const exchange = new H2UpstreamExchange(h2Headers, attempt.body, request.method === 'HEAD', sink);
      sink.onUpstreamCall(exchange);
      session.send(exchange);
    },
  };
}

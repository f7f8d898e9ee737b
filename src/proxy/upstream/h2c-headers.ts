// The request header block toward an h2c upstream, from the header map the forwarding rules and filters made
// (hop-by-hop already gone): Host becomes :authority, `te` goes along only as `trailers`.
import type { OutgoingHttpHeaders } from 'node:http2';
import type { ClientRequest } from '../exchange.js';
import { emptyHeaderMap, type HeaderMap, SINGLE_VALUE_OVER_HTTP2 } from '../wire/headers.js';

/** The client asked for trailers (`te: trailers`, gRPC's requirement), which HTTP/2 lets through alone. */
function wantsTrailers(raw: string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 2 && name.toLowerCase() === 'te' && /(^|,)\s*trailers\s*(;|,|$)/i.test(raw[i + 1]!))
      return true;
  }
  return false;
}

export function h2RequestHeaders(
  method: string,
  target: string,
  headers: HeaderMap,
  req: ClientRequest,
  authority: string,
): OutgoingHttpHeaders {
  const host = headers.host;
  // No prototype: a request field named `__proto__` or `constructor` is copied as a key like any other.
  const out = emptyHeaderMap() as OutgoingHttpHeaders;
  out[':method'] = method;
  out[':path'] = target;
  out[':scheme'] = 'http';
  out[':authority'] = (Array.isArray(host) ? host[0] : host) ?? authority;
  for (const name in headers) {
    // Framing is HTTP/2's own; the length goes along from the parsed request only.
    if (name === 'host' || name === 'content-length' || name === 'transfer-encoding') continue;
    const value = headers[name]!;
    // An HTTP/1.1 client's repeat of a single-value field: Node would refuse the whole request.
    out[name] = Array.isArray(value) && SINGLE_VALUE_OVER_HTTP2.has(name) ? value[0] : value;
  }
  if (req.contentLength >= 0) out['content-length'] = String(req.contentLength);
  if (wantsTrailers(req.rawHeaders)) out.te = 'trailers';
  return out;
}

// An HTTP/2 request stream as the ClientRequest the handler knows: pseudo-headers to method and target,
// :authority as Host (Host only when it is absent, RFC 9113 §8.3.1), cookie fields joined into one (§8.2.3),
// and what must never reach an HTTP/1.1 backend refused: CR, LF or NUL in a value (nghttp2 checks too), a
// connection-specific field, a content-length that is not one number.

import type { ServerHttp2Stream } from 'node:http2';
import { type ClientFacts, ClientRequest } from '../../exchange.js';
import { HTTP2_CONNECTION_SPECIFIC } from '../../wire/headers.js';
import { isValidFieldValue, parseContentLength } from '../../wire/http-syntax.js';
import type { Refusal } from '../../wire/refusal.js';
import { H2RequestBody } from './request-body.js';

/**
 * Whether every character is visible ASCII, as an HTTP/1.1 request target must be (RFC 9112 §3.2, the HTTP/1.1
 * front's rule): the path goes into an upstream request line as it is.
 */
function isVisibleAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 32 || c >= 127) return false;
  }
  return true;
}

/**
 * The request on `stream`, or why it is refused (status 0: reset the stream). `raw`: the header block as
 * received (name, value, ...); `ended`: the HEADERS frame ended the stream (no body).
 */
export function requestFromStream(
  stream: ServerHttp2Stream,
  raw: string[],
  ended: boolean,
  client: ClientFacts,
  /** SETTINGS_MAX_HEADER_LIST_SIZE: nghttp2 enforces it only once the client acknowledged our SETTINGS. */
  maxHeaderListSize: number,
): ClientRequest | Refusal {
  let method = '';
  let path = '';
  let authority: string | undefined;
  let host: string | undefined;
  let cookie: string | undefined;
  let contentLength = -1;
  const lines: string[] = [];
  let listSize = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    listSize += name.length + value.length + 32;
    if (listSize > maxHeaderListSize) return { status: 431, reason: 'header list too large' };
    if (!isValidFieldValue(value)) return { status: 0, reason: 'invalid character in a header value' };
    if (name.charCodeAt(0) === 58) {
      if (name === ':method') method = value;
      else if (name === ':path') path = value;
      else if (name === ':authority') authority = value;
      continue;
    }
    if (HTTP2_CONNECTION_SPECIFIC.has(name))
      return { status: 0, reason: `connection-specific header ${name}` };
    if (name === 'host') {
      host ??= value;
      continue;
    }
    if (name === 'cookie') {
      cookie = cookie === undefined ? value : `${cookie}; ${value}`;
      continue;
    }
    if (name === 'content-length') {
      const n = parseContentLength(value);
      if (n < 0 || (contentLength >= 0 && n !== contentLength))
        return { status: 400, reason: 'invalid content-length' };
      contentLength = n;
    }
    if (name === 'te' && value.trim().toLowerCase() !== 'trailers')
      return { status: 0, reason: 'te other than trailers' };
    lines.push(name, value);
  }
  if (method === 'CONNECT') return { status: 501, reason: 'CONNECT is not proxied' };
  if (
    path === '' ||
    (path.charCodeAt(0) !== 47 && !(path === '*' && method === 'OPTIONS')) ||
    !isVisibleAscii(path)
  )
    return { status: 400, reason: 'invalid :path' };
  const hostValue = authority ?? host;
  if (hostValue !== undefined) lines.push('host', hostValue);
  if (cookie !== undefined) lines.push('cookie', cookie);
  const body = ended ? null : new H2RequestBody(stream);
  const chunked = body !== null && contentLength < 0;
  return new ClientRequest(method, path, lines, client, body, chunked, contentLength);
}

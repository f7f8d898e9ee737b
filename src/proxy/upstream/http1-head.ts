// The request head toward an upstream, as one string. The common case (no request header filters) is built
// in one pass over the client's raw header lines; with filters, from the header map the filters edited.

import type { ClientRequest } from '../exchange.js';
import { nextRequestId } from '../routing/request-id.js';
import {
  believedForwardedFor,
  clientHeaderRule,
  connectionLines,
  FORWARDED_FOR,
  forwardingHeaders,
  forwardingLines,
  PASS,
  REQUEST_ID,
  TRACE_PARENT,
  untrustedPrefix,
} from '../wire/forwarded-headers.js';
import { connectionListed, type HeaderMap, HOP_BY_HOP } from '../wire/headers.js';
import { isHeaderName, isValidFieldValue } from '../wire/http-syntax.js';
import type { RequestHead } from '../wire/request-head.js';

// What the one-pass builder does with a (lower-case) request header name besides the forwarding headers'
// rules (forwarded-headers.ts); absent: pass it on. Hop-by-hop ones (headers.ts) are dropped.
const DROPPED = 1;
const HOST = 2;
const CONTENT_LENGTH = 3;
const SPECIAL = new Map<string, number>([
  ...Array.from(HOP_BY_HOP, (name): [string, number] => [name, DROPPED]),
  ['host', HOST],
  ['content-length', CONTENT_LENGTH],
]);

const NO_IDS: readonly string[] = [];

export interface HeadOptions {
  method: string;
  target: string;
  proto: 'http' | 'https';
  /** The route timeout, sent as x-portico-expected-rq-timeout-ms when > 0. */
  timeoutMs: number;
  /** A URLRewrite hostname, replacing the Host header. */
  hostRewrite: string | undefined;
  /** The body is re-framed as chunked (its length is unknown): no content-length goes along. */
  chunked: boolean;
  /** The body length from the client's parsed Content-Length, -1 when it sent none (or is chunked). */
  contentLength: number;
  /** Host header when the client sent none: the endpoint's `host:port`. */
  authority: string;
  /** The proxy's traceparent, replacing the client's (tracing on); undefined: the client's passes on. */
  traceparent: string | undefined;
}

/**
 * The head from the client's header lines: hop-by-hop and untrusted forwarding headers dropped, ours added.
 * An HTTP/1.1 request's lines that pass go on as runs of its own head's text; others are written line by line.
 */
export function requestHeadFromRaw(req: ClientRequest, o: HeadOptions): string {
  const head = req.head;
  if (head !== undefined && head.authority === undefined && !head.listsFields)
    return requestHeadFromWire(req, head, o);
  return requestHeadFromLines(req, o);
}

/** Whether a line of a known name (wire/header-names.ts) is passed on as it came, by the rules requestHeadFromLines applies. */
function passesAsIs(name: string, o: HeadOptions): boolean {
  if (HOP_BY_HOP.has(name) || name === 'host' || name === 'content-length') return false;
  const rule = clientHeaderRule(name);
  return rule === PASS || (rule === TRACE_PARENT && o.traceparent === undefined);
}

function requestHeadFromWire(req: ClientRequest, head: RequestHead, o: HeadOptions): string {
  const { text, offsets, names } = head;
  // The client's request line when it is what goes upstream.
  let out =
    o.target === req.url && o.method === req.method && head.minor === 1
      ? text.slice(0, text.indexOf('\n') + 1)
      : `${o.method} ${o.target} HTTP/1.1\r\n`;
  let run = -1;
  let forwardedFor: string | undefined;
  let requestIds: string[] | undefined;
  for (let k = 0, i = 0; k < names.length; k++, i += 4) {
    const name = names[k];
    const start = offsets[i]!;
    // An unknown name is never x-forwarded-for or x-request-id (both are known): only the prefix rule applies.
    if (name === undefined ? !untrustedPrefix(text, start, offsets[i + 1]!) : passesAsIs(name, o)) {
      if (run < 0) run = start;
      continue;
    }
    if (run >= 0) out += text.slice(run, start);
    run = -1;
    if (name === 'x-forwarded-for') {
      const value = text.slice(offsets[i + 2], offsets[i + 3]);
      forwardedFor = forwardedFor === undefined ? value : `${forwardedFor}, ${value}`;
    } else if (name === 'x-request-id') {
      requestIds ??= [];
      requestIds.push(text.slice(offsets[i + 2], offsets[i + 3]));
    }
  }
  if (run >= 0) out += text.slice(run);
  if (o.traceparent !== undefined) out += `traceparent: ${o.traceparent}\r\n`;
  out += `host: ${o.hostRewrite ?? head.host ?? o.authority}\r\n`;
  const client = req.client;
  const facts = { clientIp: client.peerIp, origin: client.origin, proto: o.proto, timeoutMs: o.timeoutMs };
  client.lines ??= connectionLines(facts);
  const believed = believedForwardedFor(client.trustedChain, forwardedFor);
  out += forwardingLines(facts, client.lines, believed, requestIds ?? NO_IDS, nextRequestId);
  return `${out}${framing(o)}\r\n`;
}

/** The head from the client's raw header lines, one by one. */
function requestHeadFromLines(req: ClientRequest, o: HeadOptions): string {
  const raw = req.rawHeaders;
  const listed = connectionListed(raw);
  let head = `${o.method} ${o.target} HTTP/1.1\r\n`;
  let host = false;
  let requestIds: string[] | undefined;
  let forwardedFor: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (listed?.has(name)) continue;
    const value = raw[i + 1]!;
    const kind = SPECIAL.get(name);
    if (kind !== undefined) {
      if (kind === HOST && !host) {
        // One Host upstream even if the client sent several (Node routes on the first).
        host = true;
        head += `host: ${o.hostRewrite ?? value}\r\n`;
      }
      // Hop-by-hop dropped; framing is written from the parsed length below, never copied from the client.
      continue;
    }
    const rule = clientHeaderRule(name);
    if (rule === PASS) head += `${name}: ${value}\r\n`;
    else if (rule === FORWARDED_FOR)
      forwardedFor = forwardedFor === undefined ? value : `${forwardedFor}, ${value}`;
    else if (rule === REQUEST_ID) {
      requestIds ??= [];
      requestIds.push(value);
    } else if (rule === TRACE_PARENT && o.traceparent === undefined) head += `${name}: ${value}\r\n`;
  }
  if (o.traceparent !== undefined) head += `traceparent: ${o.traceparent}\r\n`;
  if (!host) head += `host: ${o.hostRewrite ?? o.authority}\r\n`;
  const client = req.client;
  const facts = { clientIp: client.peerIp, origin: client.origin, proto: o.proto, timeoutMs: o.timeoutMs };
  const believed = believedForwardedFor(client.trustedChain, forwardedFor);
  const ours = forwardingHeaders(facts, believed, requestIds ?? NO_IDS, nextRequestId);
  for (let i = 0; i < ours.length; i += 2) head += `${ours[i]}: ${ours[i + 1]}\r\n`;
  return `${head}${framing(o)}\r\n`;
}

/** The upstream's framing lines: exactly what the proxy will send as the body, nothing a header could change. */
function framing(o: HeadOptions): string {
  if (o.chunked) return 'transfer-encoding: chunked\r\n';
  return o.contentLength >= 0 ? `content-length: ${o.contentLength}\r\n` : '';
}

/** The head from a header map (after request header filters). */
export function requestHeadFromMap(headers: HeaderMap, o: HeadOptions): string {
  let head = `${o.method} ${o.target} HTTP/1.1\r\n`;
  if (headers.host === undefined) head += `host: ${o.authority}\r\n`;
  for (const name in headers) {
    // Framing comes from the parsed request only (not from the client's lines or a filter).
    if (name === 'content-length' || name === 'transfer-encoding') continue;
    const value = headers[name]!;
    if (typeof value === 'string') head += `${name}: ${value}\r\n`;
    else for (const v of value) head += `${name}: ${v}\r\n`;
  }
  return `${head}${framing(o)}\r\n`;
}

/** A request target and header lines set from configuration can be sent: no CR/LF or other control bytes. */
export function sendable(
  target: string,
  headers: HeaderMap | undefined,
  hostRewrite: string | undefined,
): boolean {
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c <= 32 || c >= 127) return false;
  }
  if (hostRewrite !== undefined && !isValidFieldValue(hostRewrite)) return false;
  if (headers === undefined) return true;
  for (const name in headers) {
    if (!isHeaderName(name)) return false;
    const value = headers[name]!;
    if (typeof value === 'string') {
      if (!isValidFieldValue(value)) return false;
    } else for (const v of value) if (!isValidFieldValue(v)) return false;
  }
  return true;
}

const REQUEST_ID_LINE = '\r\nx-request-id: ';

/** The x-request-id the proxy wrote into an upstream head (the only one: a client's never passes as is). */
export function requestIdOf(head: string): string | undefined {
  const at = head.indexOf(REQUEST_ID_LINE);
  if (at < 0) return undefined;
  const start = at + REQUEST_ID_LINE.length;
  return head.slice(start, head.indexOf('\r\n', start));
}

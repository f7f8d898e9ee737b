// Which forwarding headers a client may send, and the ones the proxy adds (docs/architecture.md, What the proxy answers), decided in one place
// for every way a request goes upstream: plain, with request filters, and upgraded (WebSocket). The proxy is the
// edge: what a client claims about earlier hops or about Portico itself is not passed on as if vouched for.
//
//   x-forwarded-for    the client's list is kept and the client address the proxy saw is appended: only the
//                      last entry is Portico's word (a backend that trusts it reads the rightmost one)
//   x-forwarded-proto  the proxy's own scheme (http or https of the listener), the client's is dropped
//   x-forwarded-*      every other one (host, port, prefix, client-cert…) is dropped: Portico does not set them
//   forwarded          dropped (RFC 7239): Portico does not set it, so a client's could only mislead
//   x-request-id       a client's is kept when it is one plain id (tracing goes on across hops); else replaced
//   x-portico-*        always dropped: the proxy alone sets x-portico-internal / -external-address / -expected-…
//   traceparent        replaced by the proxy's own when tracing is on (trace-context.ts); else passed on

/** What the proxy does with a client's request header, by lower-case name. */
export const PASS = 0;
export const DROP = 1;
/** Kept, with the client address appended. */
export const FORWARDED_FOR = 2;
/** Kept when it is one acceptable id. */
export const REQUEST_ID = 3;
/** Replaced when the proxy traces, else passed on. */
export const TRACE_PARENT = 4;

export type ClientHeaderRule =
  | typeof PASS
  | typeof DROP
  | typeof FORWARDED_FOR
  | typeof REQUEST_ID
  | typeof TRACE_PARENT;

const X = 120; // 'x'
const T = 116; // 't'

export function clientHeaderRule(lowerName: string): ClientHeaderRule {
  const first = lowerName.charCodeAt(0);
  if (first === T) return lowerName === 'traceparent' ? TRACE_PARENT : PASS;
  if (first !== X) return lowerName === 'forwarded' ? DROP : PASS;
  if (lowerName === 'x-forwarded-for') return FORWARDED_FOR;
  if (lowerName === 'x-request-id') return REQUEST_ID;
  return untrustedPrefix(lowerName, 0, lowerName.length) ? DROP : PASS;
}

/**
 * Whether the header name text [from, to) (in any case) starts as the names a client may not send on do: any
 * x-forwarded-* (x-forwarded-for aside, which clientHeaderRule decides first) and every x-portico-*. Read in
 * place, so a head's unknown names are judged without cutting or lower-casing them (upstream/http1-head.ts).
 */
export function untrustedPrefix(text: string, from: number, to: number): boolean {
  return startsWithName(text, from, to, 'x-forwarded-') || startsWithName(text, from, to, 'x-portico-');
}

/** Whether text [from, to) starts with `prefix` (lower-case letters and `-`) in any ASCII case. */
function startsWithName(text: string, from: number, to: number, prefix: string): boolean {
  if (to - from < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    // `| 0x20` lower-cases a letter; of the other characters it maps only CR onto one of the prefix's (`-`).
    const c = text.charCodeAt(from + i);
    if ((c | 0x20) !== prefix.charCodeAt(i) || c === 13) return false;
  }
  return true;
}

const MAX_REQUEST_ID = 128;

/** One plain id (a UUID, a trace id): letters, digits and `-._:+/=`, at most 128 characters. */
export function acceptableRequestId(value: string): boolean {
  if (value.length === 0 || value.length > MAX_REQUEST_ID) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    // - . _ : + / =
    if (!alnum && c !== 45 && c !== 46 && c !== 95 && c !== 58 && c !== 43 && c !== 47 && c !== 61)
      return false;
  }
  return true;
}

/**
 * The x-forwarded-for entries sent before the peer's: the client's own list (`sent`) without a client IP policy,
 * else only what the policy believed (`trustedChain`; '' none).
 */
export function believedForwardedFor(
  trustedChain: string | undefined,
  sent: string | undefined,
): string | undefined {
  if (trustedChain === undefined) return sent;
  return trustedChain === '' ? undefined : trustedChain;
}

export interface ForwardingFacts {
  /** The peer's address as the proxy saw it (IPv4-mapped IPv6 unwrapped): appended to x-forwarded-for. */
  clientIp: string;
  /** `x-portico-internal: true` or `x-portico-external-address: <ip>`, as name and value. */
  origin: readonly [string, string];
  proto: 'http' | 'https';
  /** The route timeout; sent as x-portico-expected-rq-timeout-ms when > 0. */
  timeoutMs: number;
}

/**
 * The forwarding headers toward the upstream as name, value pairs. `clientForwardedFor`: the client's
 * x-forwarded-for values joined with `, ` (undefined: none); `clientRequestIds`: its x-request-id values.
 */
export function forwardingHeaders(
  facts: ForwardingFacts,
  clientForwardedFor: string | undefined,
  clientRequestIds: readonly string[],
  newRequestId: () => string,
): string[] {
  const forwardedFor =
    clientForwardedFor === undefined ? facts.clientIp : `${clientForwardedFor}, ${facts.clientIp}`;
  const requestId = chosenRequestId(clientRequestIds, newRequestId);
  const out = [
    'x-forwarded-for',
    forwardedFor,
    'x-forwarded-proto',
    facts.proto,
    'x-request-id',
    requestId,
    facts.origin[0],
    facts.origin[1],
  ];
  if (facts.timeoutMs > 0) out.push('x-portico-expected-rq-timeout-ms', String(facts.timeoutMs));
  return out;
}

/** The x-request-id sent upstream: the client's when it sent exactly one acceptable id, else a new one. */
export function chosenRequestId(clientRequestIds: readonly string[], newRequestId: () => string): string {
  const [onlyId] = clientRequestIds;
  return clientRequestIds.length === 1 && onlyId !== undefined && acceptableRequestId(onlyId)
    ? onlyId
    : newRequestId();
}

/** The forwarding lines of one client connection that do not change from request to request, made once. */
export interface ConnectionLines {
  /** `x-forwarded-for: <client ip>` for requests that bring none of their own. */
  forwardedFor: string;
  /** `x-portico-internal: true` or `x-portico-external-address: <ip>`. */
  origin: string;
}

export function connectionLines(facts: Pick<ForwardingFacts, 'clientIp' | 'origin'>): ConnectionLines {
  return {
    forwardedFor: `x-forwarded-for: ${facts.clientIp}\r\n`,
    origin: `${facts.origin[0]}: ${facts.origin[1]}\r\n`,
  };
}

const PROTO_LINES = { http: 'x-forwarded-proto: http\r\n', https: 'x-forwarded-proto: https\r\n' } as const;
const timeoutLines = new Map<number, string>();

/**
 * The forwarding headers as lines of an HTTP/1.1 head, in forwardingHeaders' order and by its rules, with the
 * parts that stay the same for a connection or a route made once.
 */
export function forwardingLines(
  facts: ForwardingFacts,
  lines: ConnectionLines,
  clientForwardedFor: string | undefined,
  clientRequestIds: readonly string[],
  newRequestId: () => string,
): string {
  const forwardedFor =
    clientForwardedFor === undefined
      ? lines.forwardedFor
      : `x-forwarded-for: ${clientForwardedFor}, ${facts.clientIp}\r\n`;
  const requestId = chosenRequestId(clientRequestIds, newRequestId);
  let out = `${forwardedFor}${PROTO_LINES[facts.proto]}x-request-id: ${requestId}\r\n${lines.origin}`;
  const ms = facts.timeoutMs;
  if (ms > 0) {
    let timeout = timeoutLines.get(ms);
    if (timeout === undefined) {
      timeout = `x-portico-expected-rq-timeout-ms: ${ms}\r\n`;
      if (timeoutLines.size < 64) timeoutLines.set(ms, timeout);
    }
    out += timeout;
  }
  return out;
}

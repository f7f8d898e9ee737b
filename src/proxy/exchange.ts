// The exchange: what a request and its response are to the handler, whichever protocol brought them. A request
// as the proxy's servers read it (the parsed head, what its client connection says about the client, read when
// the request arrives: an HTTP/2 session's socket is unbound once a reset tore it down, and its body as a
// stream), the listener it came in on, and the response the handler answers through.
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { ConnectionLines } from './wire/forwarded-headers.js';
import { clientIp, isInternalAddress } from './wire/headers.js';
import type { RequestHead } from './wire/request-head.js';

/** What a client connection says about its client, read once per connection. */
export interface ClientFacts {
  /** The client address as the access log shows it: the peer's as the socket gave it, or the one a trusted peer reported. */
  address: string | undefined;
  /** The client address (IPv4-mapped IPv6 unwrapped): the peer, or the client a trusted peer reported (client-address.ts). */
  ip: string;
  /** The peer's address, unwrapped: the entry the proxy appends to x-forwarded-for. */
  peerIp: string;
  /**
   * Set by the listener's client IP policy: the x-forwarded-for entries sent on before the peer's ('' none), in
   * place of the client's own; undefined without a policy (the client's list is kept, as the edge always did).
   */
  trustedChain: string | undefined;
  /** `x-portico-internal: true` or `x-portico-external-address: <ip>`, as name and value. */
  origin: readonly [string, string];
  /** The forwarding lines of an HTTP/1.1 head, made on first use. */
  lines: ConnectionLines | undefined;
  /** The TLS server name (SNI) the client asked for; undefined on cleartext or without one. */
  serverName: string | undefined;
}

const CLIENT = Symbol('portico.client');
const PROXIED = Symbol('portico.proxied');
/**
 * A socket as accepted. A TLS one wraps its TCP socket (`_parent`), or (PROXY protocol listeners) a stream over it
 * (downstream/proxy-header.ts `carrying`), which Node's TLS socket holds at `_handle._parentWrap.stream`: where a
 * PROXY header's source was put.
 */
type Proxied = { [PROXIED]?: string };
type TaggedSocket = Socket & {
  [CLIENT]?: ClientFacts;
  [PROXIED]?: string;
  _parent?: Proxied;
  _handle?: { _parentWrap?: { stream?: Proxied } } | null;
};

/** The client a PROXY protocol header named for the connection `socket` (or its TLS socket) stands on. */
export function proxiedSourceOf(socket: Socket): string | undefined {
  const tagged = socket as TaggedSocket;
  return tagged[PROXIED] ?? tagged._parent?.[PROXIED] ?? tagged._handle?._parentWrap?.stream?.[PROXIED];
}

/** The client a PROXY protocol header named for this (TCP) socket: its address stands in for the peer's. */
export function setProxiedSource(socket: Socket, address: string): void {
  (socket as TaggedSocket)[PROXIED] = address;
}

/** The client's facts of `socket`, read on the first request and kept on the socket for the next ones. */
export function clientFacts(socket: Socket): ClientFacts {
  const tagged = socket as TaggedSocket;
  let facts = tagged[CLIENT];
  if (facts === undefined) {
    const address = proxiedSourceOf(socket) ?? socket.remoteAddress;
    const ip = clientIp(address);
    const sni = (socket as Partial<TLSSocket>).servername;
    facts = {
      address,
      ip,
      peerIp: ip,
      trustedChain: undefined,
      origin: originOf(ip),
      lines: undefined,
      serverName: typeof sni === 'string' && sni !== '' ? sni : undefined,
    };
    tagged[CLIENT] = facts;
  }
  return facts;
}

/**
 * The request's client address: the one every policy keys on (access rules, rate limits), logs and traces. A
 * listener's client IP policy (client-address.ts) has replaced the peer by the client it reported, if trusted.
 */
export function clientIpOf(request: ClientRequest): string {
  return request.client.ip;
}

/** `x-portico-internal: true` for a loopback or private client, else `x-portico-external-address: <ip>`. */
export function originOf(ip: string): readonly [string, string] {
  return isInternalAddress(ip) ? ['x-portico-internal', 'true'] : ['x-portico-external-address', ip];
}

/** A request body: its bytes as a stream, then the trailer fields the client sent after them, if any. */
export interface RequestBody extends Readable {
  /** Trailer lines (name, value, ...) that may be relayed (trailers.ts); set before the stream ends. */
  readonly trailers: string[] | undefined;
  /** Body bytes received from the client so far. */
  readonly received: number;
  /** Set by the handler: past `maxBytes` received, the body stops and `exceeded` runs (once). */
  limit: BodyLimit | undefined;
}

/** A request body's size limit (413), checked by the downstream as bytes arrive. */
export interface BodyLimit {
  maxBytes: number;
  exceeded(): void;
}

/** Counts `chunk` into `body`; false (and the limit's `exceeded` told, once) when it went past its limit. */
export function withinLimit(
  body: { received: number; limit: BodyLimit | undefined },
  chunk: Buffer,
): boolean {
  body.received += chunk.length;
  const limit = body.limit;
  if (limit === undefined || body.received <= limit.maxBytes) return true;
  body.limit = undefined;
  limit.exceeded();
  return false;
}

/** The first Host value among header lines (name, value, ...). */
export function firstHost(raw: readonly string[]): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') return raw[i + 1];
  }
  return undefined;
}

/** A connection's places upstream, which its requests take and give back one each (downstream/h2/upstream-share.ts). */
export interface UpstreamPlaces {
  /** Runs `start` now when a place is free (taking it), else when one of the connection's places frees. */
  take(start: () => void): void;
  /** Gives back a place take() gave. */
  give(): void;
}

/** What a request needs to know about the socket it arrived on. */
export interface ListenerContext {
  name: string;
  proto: 'http' | 'https';
  /** Being removed: responses ask clients to reconnect (to the listener that replaces it, if any). */
  closing: boolean;
  /** The listener's client IP policy, applied to each request at its start (client-address.ts); undefined: none. */
  findClient: ((request: ClientRequest) => void) | undefined;
  /** The largest request body of the listener's requests (a route may say otherwise); larger gets 413. */
  maxRequestBodyBytes: number;
}

export class ClientRequest {
  private headerMap: IncomingHttpHeaders | undefined = undefined;
  /** HTTP/2: its connection's share of upstream places (downstream/h2/upstream-share.ts); HTTP/1.1 holds one at a time. */
  upstreamShare: UpstreamPlaces | undefined = undefined;
  /**
   * The claims of the request's verified JWT, set by the authentication policy once it checked the token: what a
   * rate limit keyed by a claim reads (rate-limits.ts). Undefined: no verified token.
   */
  claims: Readonly<Record<string, unknown>> | undefined = undefined;

  constructor(
    readonly method: string,
    /** The request target, verbatim. */
    readonly url: string,
    /** Header lines as received (name, value, ...), or the HTTP/1.1 head they stand in. */
    private readonly lines: string[] | RequestHead,
    /** Its client connection's facts (clientFacts); a listener's client IP policy replaces them at the start. */
    public client: ClientFacts,
    /** The body, or null when the request has none. */
    readonly body: RequestBody | null,
    /** The body is chunked on the wire (its length is unknown). */
    readonly chunked: boolean,
    /** The body length the client's Content-Length gave (as parsed), -1 when it sent none. */
    readonly contentLength: number = -1,
  ) {}

  /** Header lines as received: name, value, ... (from an HTTP/1.1 head: made on first use). */
  get rawHeaders(): string[] {
    const lines = this.lines;
    return Array.isArray(lines) ? lines : lines.rawHeaders;
  }

  /** The first Host value (an HTTP/1.1 absolute-form target's authority takes its place). */
  get host(): string | undefined {
    const lines = this.lines;
    return Array.isArray(lines) ? firstHost(lines) : lines.host;
  }

  /** The HTTP/1.1 head with its lines where they stand in its text; undefined for HTTP/2. */
  get head(): RequestHead | undefined {
    const lines = this.lines;
    return Array.isArray(lines) ? undefined : lines;
  }

  /** Lower-case names; repeated headers joined with `, ` (set-cookie: a list). Built on first use only. */
  get headers(): IncomingHttpHeaders {
    let map = this.headerMap;
    if (map === undefined) {
      // No prototype: a client's `__proto__` or `constructor` field is a key, not an inherited member.
      map = Object.create(null) as IncomingHttpHeaders;
      const raw = this.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) {
        const name = raw[i]!.toLowerCase();
        const value = raw[i + 1]!;
        const existing = map[name];
        if (name === 'set-cookie') {
          if (Array.isArray(existing)) existing.push(value);
          else map['set-cookie'] = [value];
        } else map[name] = existing === undefined ? value : `${existing as string}, ${value}`;
      }
      this.headerMap = map;
    }
    return map;
  }
}

/** The handler as the servers call it, for a request and the response it answers through. */
export type ExchangeHandler = (
  context: ListenerContext,
  request: ClientRequest,
  response: ProxyResponse,
) => void;

/** Who hears about the response's socket: set by the request handler. */
export interface ResponseListener {
  /** The socket takes more bytes again after write() returned false. */
  onResponseDrain(): void;
  /** The response ended (all bytes handed to the socket) or its connection went away; called once. */
  onResponseClose(): void;
}

/** What the request handler answers through: an HTTP/1.1 response on a connection, or an HTTP/2 stream. */
export interface ProxyResponse {
  statusCode: number;
  readonly headersSent: boolean;
  /** end() ran: every byte is with the transport. */
  readonly writableFinished: boolean;
  listener: ResponseListener | undefined;
  /** The request is gRPC over HTTP/2: the proxy's own answers are gRPC statuses, not bare HTTP ones. */
  readonly grpc: boolean;
  /** Status and header lines (name, value, ...); `validate`: throw InvalidHeaderError for one that cannot be sent. */
  writeHead(status: number, lines: string[], validate?: boolean): void;
  /**
   * HTTP/1.1 only: status and header lines as text, each ending in CRLF and fit to send as it is (an upstream's
   * lines passed on), with what writeHead would learn from them: a content-length and a date line among them;
   * `close`: the connection closes after this response (a `connection: close` line is added).
   */
  writeHeadText?(status: number, lines: string, hasLength: boolean, hasDate: boolean, close: boolean): void;
  /** A body chunk (copied); false when the transport is full (wait for onResponseDrain). */
  write(chunk: Buffer): boolean;
  /** Ends the response with its last body bytes (copied) and trailer lines, where the client can take them. */
  end(chunk?: Buffer, trailers?: string[]): void;
  /** Sends the head written by writeHead now, not with the first body bytes: they may be long in coming. */
  sendHead(): void;
  /** Body bytes handed to the transport so far (framing and headers not counted). */
  readonly bodyBytesSent: number;
  /** `HTTP/1.0`, `HTTP/1.1` or `HTTP/2`, as the access log shows it. */
  readonly protocol: string;
  /** Answers `status` with no body (or cuts a response under way) without reading the rest of the request. */
  abort(status: number): void;
  /** Abandons the response: the client must see it broken, not short. */
  destroy(): void;
}

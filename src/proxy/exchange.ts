// One request as the proxy's servers read it: the parsed head, what its client connection says about the client
// (read when the request arrives: an HTTP/2 session's socket is unbound once a reset tore it down) and, when it
// has one, its body as a stream.
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { UpstreamShare } from './downstream/h2/upstream-share.js';
import type { ConnectionLines } from './wire/forwarded-headers.js';
import { clientIp, isInternalAddress } from './wire/headers.js';
import type { RequestHead } from './wire/request-head.js';

/** What a client connection says about its client, read once per connection. */
export interface ClientFacts {
  /** The peer address as the socket gave it (the access log's); undefined when it was already gone. */
  address: string | undefined;
  /** The same with IPv4-mapped IPv6 unwrapped: the forwarding headers'. */
  ip: string;
  /** `x-portico-internal: true` or `x-portico-external-address: <ip>`, as name and value. */
  origin: readonly [string, string];
  /** The forwarding lines of an HTTP/1.1 head, made on first use. */
  lines: ConnectionLines | undefined;
  /** The TLS server name (SNI) the client asked for; undefined on cleartext or without one. */
  serverName: string | undefined;
}

const CLIENT = Symbol('portico.client');
type TaggedSocket = Socket & { [CLIENT]?: ClientFacts };

/** The client's facts of `socket`, read on the first request and kept on the socket for the next ones. */
export function clientFacts(socket: Socket): ClientFacts {
  const tagged = socket as TaggedSocket;
  let facts = tagged[CLIENT];
  if (facts === undefined) {
    const address = socket.remoteAddress;
    const ip = clientIp(address);
    const origin = isInternalAddress(ip)
      ? (['x-portico-internal', 'true'] as const)
      : (['x-portico-external-address', ip] as const);
    const sni = (socket as Partial<TLSSocket>).servername;
    facts = {
      address,
      ip,
      origin,
      lines: undefined,
      serverName: typeof sni === 'string' && sni !== '' ? sni : undefined,
    };
    tagged[CLIENT] = facts;
  }
  return facts;
}

/** A request body: its bytes as a stream, then the trailer fields the client sent after them, if any. */
export interface RequestBody extends Readable {
  /** Trailer lines (name, value, ...) that may be relayed (trailers.ts); set before the stream ends. */
  readonly trailers: string[] | undefined;
  /** Body bytes received from the client so far. */
  readonly received: number;
}

/** The first Host value among header lines (name, value, ...). */
export function firstHost(raw: readonly string[]): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') return raw[i + 1];
  }
  return undefined;
}

export class ClientRequest {
  private headerMap: IncomingHttpHeaders | undefined = undefined;
  /** HTTP/2: its connection's share of upstream places (upstream-share.ts); HTTP/1.1 holds one at a time. */
  upstreamShare: UpstreamShare | undefined = undefined;

  constructor(
    readonly method: string,
    /** The request target, verbatim. */
    readonly url: string,
    /** Header lines as received (name, value, ...), or the HTTP/1.1 head they stand in. */
    private readonly lines: string[] | RequestHead,
    /** Its client connection's facts (clientFacts). */
    readonly client: ClientFacts,
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

// One request as the proxy's own HTTP/1.1 server read it: the parsed head, its socket and, when it has one,
// its body as a stream.
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';

/** A request body: its bytes as a stream, then the trailer fields the client sent after them, if any. */
export interface RequestBody extends Readable {
  /** Trailer lines (name, value, ...) that may be relayed (trailers.ts); set before the stream ends. */
  readonly trailers: string[] | undefined;
  /** Body bytes received from the client so far. */
  readonly received: number;
}

export class ClientRequest {
  private headerMap: IncomingHttpHeaders | undefined = undefined;

  constructor(
    readonly method: string,
    /** The request target, verbatim. */
    readonly url: string,
    /** Header lines as received: name, value, ... */
    readonly rawHeaders: string[],
    readonly socket: Socket,
    /** The body, or null when the request has none. */
    readonly body: RequestBody | null,
    /** The body is chunked on the wire (its length is unknown). */
    readonly chunked: boolean,
    /** The body length the client's Content-Length gave (as parsed), -1 when it sent none. */
    readonly contentLength: number = -1,
  ) {}

  /** Lower-case names; repeated headers joined with `, ` (set-cookie: a list). Built on first use only. */
  get headers(): IncomingHttpHeaders {
    let map = this.headerMap;
    if (map === undefined) {
      map = {};
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

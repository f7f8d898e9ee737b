// What an access check sees of a request: method, path, query, headers, the client's address and TLS. One accessor
// gives the client's address, so where it comes from (the connection, or a trusted forwarding header) is one choice.
import { type ClientRequest, clientIpOf } from '../exchange.js';

export interface AccessRequest {
  readonly method: string;
  /** The normalised path, as routes matched it. */
  readonly path: string;
  /** `?…` as the client sent it, or empty. */
  readonly search: string;
  /** Lower-case name; repeated fields joined with `, `. */
  header(name: string): string | undefined;
  /** The client's IP address (IPv4-mapped IPv6 unwrapped). */
  readonly clientAddress: string;
  /** The TLS server name the client asked for; undefined on cleartext or without SNI. */
  readonly serverName: string | undefined;
  readonly tls: boolean;
  /** The request target as the client sent it (an authorization service is asked about this). */
  readonly target: string;
  /** The Host (or :authority) the client sent. */
  readonly host: string | undefined;
  /** Header lines as received: name, value, ... (an ext_authz service gets them all). */
  readonly headerLines: readonly string[];
  /** The body a step asked for (`AccessStep.bodyBytes`), buffered before the pipeline ran; else undefined. */
  body: Buffer | undefined;
}

/** The client's address an access check uses: the connection's peer. */
export function clientAddressOf(req: ClientRequest): string {
  return clientIpOf(req);
}

export function accessRequest(req: ClientRequest, path: string, search: string, tls: boolean): AccessRequest {
  return {
    method: req.method,
    path,
    search,
    header: (name) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    },
    clientAddress: clientAddressOf(req),
    serverName: req.client.serverName,
    tls,
    target: req.url,
    host: req.host,
    headerLines: req.rawHeaders,
    body: undefined,
  };
}

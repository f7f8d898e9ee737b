// What an unauthenticated local admin endpoint accepts. A web page can make a browser send requests to
// loopback: through DNS rebinding (a name of the attacker's that resolves to 127.0.0.1, so the Host header
// carries that name) or as a cross-site "simple" POST (which carries an Origin and no custom header).
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { isLoopbackHost } from './listen-scope.js';

/** The header a mutation must carry: browsers cannot add it cross-site without a preflight we never grant. */
export const ADMIN_MUTATION_HEADER = 'x-portico-admin';

export interface AdminRequestGuard {
  /** The address the server is bound to, and its port. */
  host: string;
  port: number;
}

/** Why the request is refused (a 403 message), or undefined when it may proceed. */
export function refuseAdminRequest(
  request: IncomingMessage,
  bound: AdminRequestGuard,
  mutation: boolean,
): string | undefined {
  const host = request.headers.host ?? '';
  if (!hostNamesThisServer(host, bound)) {
    return `Host '${host}' is not this admin API's address; use ${bound.host}:${bound.port}`;
  }
  if (!mutation) return undefined;
  if (request.headers.origin !== undefined)
    return 'requests from a web page (with an Origin header) are refused';
  if (request.headers[ADMIN_MUTATION_HEADER] === undefined) {
    return `a change needs the header '${ADMIN_MUTATION_HEADER}: true'`;
  }
  return undefined;
}

/**
 * The Host must name this server by address, or as `localhost` when it listens on loopback, with its port.
 * A wildcard bind answers on every address, so any IP literal is this server; a DNS name never is.
 */
export function hostNamesThisServer(header: string, bound: AdminRequestGuard): boolean {
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(header.trim().toLowerCase());
  if (match === null) return false;
  const name = match[1]!.replace(/^\[|\]$/g, '');
  const port = match[2] === undefined ? 80 : Number(match[2]);
  if (port !== bound.port) return false;
  if (name === 'localhost') return isLoopbackHost(bound.host) || isWildcard(bound.host);
  if (isIP(name) === 0) return false;
  return isWildcard(bound.host) || name === bound.host.toLowerCase();
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

// Path rewriting and redirect locations, with the Gateway API's rules for prefixes, schemes and ports.
import type { PathMatch, PathModifier, RedirectAction } from '../../ir/fleet-config.js';
import { normalizedMatchValue } from './route-table.js';

/** Replaces the matched prefix segment-aware: prefix `/foo` → `/bar` turns `/foo/x` into `/bar/x`. */
function replacePrefix(path: string, prefix: string, replacement: string): string {
  const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  const rest = path.slice(base.length); // '' or starts with '/'
  const head = replacement.endsWith('/') ? replacement.slice(0, -1) : replacement;
  const joined = head + rest;
  return joined === '' ? '/' : joined;
}

/** The new path for a request path under a path modifier; `match` is the route's path match. */
export function rewritePath(path: string, modifier: PathModifier, match: PathMatch | undefined): string {
  if (modifier.type === 'ReplaceFullPath') return modifier.value;
  // ReplacePrefixMatch is only valid with a PathPrefix match; elsewhere the whole path is the prefix `/`. The
  // path is normalised, so the prefix it matched is the normalised value.
  const prefix = match?.type === 'PathPrefix' ? normalizedMatchValue(match.value) : '/';
  return replacePrefix(path, prefix, modifier.value);
}

const WELL_KNOWN_PORT = { http: 80, https: 443 } as const;

export interface RedirectRequest {
  scheme: 'http' | 'https';
  /** The Host without its port. */
  host: string;
  path: string;
  /** '' or `?...` */
  search: string;
  /** The Gateway listener port the request arrived on. */
  listenerPort: number;
}

export function redirectLocation(
  action: RedirectAction,
  request: RedirectRequest,
  match: PathMatch | undefined,
): string {
  const scheme = action.scheme ?? request.scheme;
  const host = action.hostname ?? request.host;
  // An explicit scheme implies its well-known port; otherwise the listener port is kept.
  const port = action.port ?? (action.scheme !== undefined ? WELL_KNOWN_PORT[scheme] : request.listenerPort);
  const path = action.path === undefined ? request.path : rewritePath(request.path, action.path, match);
  const authority = port === WELL_KNOWN_PORT[scheme] ? host : `${host}:${port}`;
  return `${scheme}://${authority}${path}${request.search}`;
}

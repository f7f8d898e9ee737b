// An HTTPRoute's rules in fleet-config terms (matches, filters, redirect, timeouts): a pure function of
// the route alone, so it is memoised on the route object.
import type { HTTPRoute, HTTPRouteFilter, HTTPRouteMatch } from '../api/http-route.js';
import { durationMs } from '../api/semantic-rules.js';
import {
  DEFAULT_ROUTE_TIMEOUT_MS,
  type HeaderModifier,
  type PathModifier,
  type RedirectAction,
  type RouteFilter,
  type RouteMatch,
} from '../ir/fleet-config.js';

export interface CompiledRule {
  index: number;
  matches: RouteMatch[];
  filters: RouteFilter[];
  /** Per backendRef, its own filters. */
  backendFilters: RouteFilter[][];
  redirect?: RedirectAction;
  timeoutMs: number;
  backendTimeoutMs?: number;
}

export interface CompiledRoute {
  rules: CompiledRule[];
  /** `field: message` for every value this implementation does not support; non-empty: not Accepted. */
  unsupported: string[];
}

const compiled = new WeakMap<HTTPRoute, CompiledRoute>();

function headerModifier(m: {
  set: { name: string; value: string }[];
  add: { name: string; value: string }[];
  remove: string[];
}): HeaderModifier {
  return {
    set: m.set.map((h) => ({ name: h.name.toLowerCase(), value: h.value })),
    add: m.add.map((h) => ({ name: h.name.toLowerCase(), value: h.value })),
    remove: m.remove.map((h) => h.toLowerCase()),
  };
}

function pathModifier(p: {
  type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  replaceFullPath?: string;
  replacePrefixMatch?: string;
}): PathModifier {
  return p.type === 'ReplaceFullPath'
    ? { type: 'ReplaceFullPath', value: p.replaceFullPath ?? '/' }
    : { type: 'ReplacePrefixMatch', value: p.replacePrefixMatch ?? '/' };
}

function validRegex(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

function compileMatch(m: HTTPRouteMatch, at: string, unsupported: string[]): RouteMatch {
  const out: RouteMatch = { headers: [], queryParams: [] };
  const p = m.path;
  if (p.type === 'PathPrefix') {
    // Trailing slashes do not change a segment-wise prefix: `/foo/` matches like `/foo`.
    const value = p.value.length > 1 ? p.value.replace(/\/+$/, '') || '/' : p.value;
    out.path = { type: 'PathPrefix', value };
  } else {
    if (p.type === 'RegularExpression' && !validRegex(p.value)) {
      unsupported.push(`${at}.path.value: invalid regular expression`);
    }
    out.path = { type: p.type, value: p.value };
  }
  m.headers.forEach((h, i) => {
    if (h.type === 'RegularExpression' && !validRegex(h.value)) {
      unsupported.push(`${at}.headers[${i}].value: invalid regular expression`);
    }
    out.headers.push({ type: h.type, name: h.name.toLowerCase(), value: h.value });
  });
  m.queryParams.forEach((q, i) => {
    if (q.type === 'RegularExpression' && !validRegex(q.value)) {
      unsupported.push(`${at}.queryParams[${i}].value: invalid regular expression`);
    }
    out.queryParams.push({ type: q.type, name: q.name, value: q.value });
  });
  if (m.method !== undefined) out.method = m.method;
  return out;
}

function compileFilters(
  filters: HTTPRouteFilter[],
  at: string,
  unsupported: string[],
  allowRedirect: boolean,
): { filters: RouteFilter[]; redirect?: RedirectAction } {
  const out: RouteFilter[] = [];
  let redirect: RedirectAction | undefined;
  filters.forEach((f, i) => {
    if (f.type === 'RequestHeaderModifier' && f.requestHeaderModifier !== undefined) {
      out.push({ type: 'RequestHeaderModifier', headers: headerModifier(f.requestHeaderModifier) });
    } else if (f.type === 'ResponseHeaderModifier' && f.responseHeaderModifier !== undefined) {
      out.push({ type: 'ResponseHeaderModifier', headers: headerModifier(f.responseHeaderModifier) });
    } else if (f.type === 'URLRewrite' && f.urlRewrite !== undefined) {
      const rewrite: RouteFilter = { type: 'URLRewrite' };
      if (f.urlRewrite.hostname !== undefined) rewrite.hostname = f.urlRewrite.hostname;
      if (f.urlRewrite.path !== undefined) rewrite.path = pathModifier(f.urlRewrite.path);
      out.push(rewrite);
    } else if (f.type === 'RequestRedirect' && f.requestRedirect !== undefined && allowRedirect) {
      const r = f.requestRedirect;
      redirect = { type: 'Redirect', statusCode: r.statusCode };
      if (r.scheme !== undefined) redirect.scheme = r.scheme;
      if (r.hostname !== undefined) redirect.hostname = r.hostname;
      if (r.path !== undefined) redirect.path = pathModifier(r.path);
      if (r.port !== undefined) redirect.port = r.port;
    } else {
      unsupported.push(
        `${at}[${i}].type: filter ${f.type} is not supported${allowRedirect ? '' : ' on a backendRef'}`,
      );
    }
  });
  return redirect === undefined ? { filters: out } : { filters: out, redirect };
}

export function compileRoute(route: HTTPRoute): CompiledRoute {
  const hit = compiled.get(route);
  if (hit !== undefined) return hit;
  const unsupported: string[] = [];
  const rules = route.spec.rules.map((rule, i): CompiledRule => {
    const at = `spec.rules[${i}]`;
    const matches = rule.matches.map((m, j) => compileMatch(m, `${at}.matches[${j}]`, unsupported));
    const { filters, redirect } = compileFilters(rule.filters, `${at}.filters`, unsupported, true);
    const backendFilters = rule.backendRefs.map(
      (b, k) => compileFilters(b.filters, `${at}.backendRefs[${k}].filters`, unsupported, false).filters,
    );
    const request = rule.timeouts?.request;
    const backendRequest = rule.timeouts?.backendRequest;
    const out: CompiledRule = {
      index: i,
      matches,
      filters,
      backendFilters,
      timeoutMs:
        request === undefined ? DEFAULT_ROUTE_TIMEOUT_MS : (durationMs(request) ?? DEFAULT_ROUTE_TIMEOUT_MS),
    };
    if (redirect !== undefined) out.redirect = redirect;
    if (backendRequest !== undefined) {
      const ms = durationMs(backendRequest);
      if (ms !== undefined) out.backendTimeoutMs = ms;
    }
    return out;
  });
  const result = { rules, unsupported };
  compiled.set(route, result);
  return result;
}

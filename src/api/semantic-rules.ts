// Cross-field rules the Gateway API CRDs enforce with CEL: checked after the schema, same error shape.
import { accessPolicyErrors } from './access-policy.js';
import type { BackendTLSPolicy } from './backend-tls-policy.js';
import { clientTrafficPolicyErrors } from './client-traffic-policy.js';
import type { Gateway } from './gateway.js';
import type { GRPCMethodMatch, GRPCRoute } from './grpc-route.js';
import type { BackendRef, HTTPRoute, HTTPRouteFilter, RequestMirror } from './http-route.js';
import type { ApiObject } from './kinds.js';
import type { ListenerSet } from './listener-set.js';
import { rateLimitPolicyErrors } from './rate-limit-policy.js';
import type { FieldError } from './schema-errors.js';

export function semanticErrors(o: ApiObject): FieldError[] {
  if (o.kind === 'Gateway') return [...listenerErrors(o.spec.listeners), ...frontendErrors(o)];
  if (o.kind === 'ListenerSet') return listenerErrors(o.spec.listeners);
  if (o.kind === 'HTTPRoute') return httpRouteErrors(o);
  if (o.kind === 'GRPCRoute') return grpcRouteErrors(o);
  if (o.kind === 'BackendTLSPolicy') return backendTlsPolicyErrors(o);
  if (o.kind === 'AccessPolicy') return accessPolicyErrors(o);
  if (o.kind === 'ClientTrafficPolicy') return clientTrafficPolicyErrors(o);
  if (o.kind === 'RateLimitPolicy') return rateLimitPolicyErrors(o);
  if (o.kind === 'Secret' && o.type === 'kubernetes.io/tls') {
    const keys = new Set([...Object.keys(o.data), ...Object.keys(o.stringData ?? {})]);
    return ['tls.crt', 'tls.key']
      .filter((k) => !keys.has(k))
      .map((k) => ({ path: ['data', k], message: 'required for type kubernetes.io/tls' }));
  }
  return [];
}

function isEmpty(map: Record<string, string> | undefined): boolean {
  return map === undefined || Object.keys(map).length === 0;
}

/** The listener rules a Gateway's and a ListenerSet's CRD both enforce. */
/** The CRD's rule on `spec.tls.frontend.perPort`: one entry per port. */
function frontendErrors(g: Gateway): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<number>();
  (g.spec.tls?.frontend?.perPort ?? []).forEach((p, i) => {
    if (seen.has(p.port))
      errors.push({
        path: ['spec', 'tls', 'frontend', 'perPort', i, 'port'],
        message: 'Port for TLS configuration must be unique within the Gateway',
      });
    seen.add(p.port);
  });
  return errors;
}

function listenerErrors(
  listeners: Gateway['spec']['listeners'] | ListenerSet['spec']['listeners'],
): FieldError[] {
  const errors: FieldError[] = [];
  const names = new Map<string, number>();
  const tuples = new Map<string, number>();
  listeners.forEach((l, i) => {
    const at = ['spec', 'listeners', i];
    const sameName = names.get(l.name);
    if (sameName !== undefined)
      errors.push({ path: [...at, 'name'], message: `duplicates listeners[${sameName}]` });
    else names.set(l.name, i);
    const tuple = `${l.port}|${l.protocol}|${l.hostname ?? ''}`;
    const sameTuple = tuples.get(tuple);
    if (sameTuple !== undefined) {
      errors.push({
        path: at,
        message: `port, protocol and hostname must be unique; same as listeners[${sameTuple}]`,
      });
    } else tuples.set(tuple, i);
    // No rule makes an HTTPS listener have tls: the CRD admits one without, and the translator reports it.
    if ((l.protocol === 'HTTP' || l.protocol === 'TCP' || l.protocol === 'UDP') && l.tls !== undefined) {
      errors.push({ path: [...at, 'tls'], message: `must not be set when protocol is ${l.protocol}` });
    }
    const tls = l.tls;
    if (tls?.mode === 'Terminate' && tls.certificateRefs.length === 0 && isEmpty(tls.options)) {
      errors.push({
        path: [...at, 'tls', 'certificateRefs'],
        message: 'must have at least 1 item when mode is Terminate and tls.options is empty',
      });
    }
  });
  return errors;
}

const FILTER_FIELDS: Record<string, keyof HTTPRouteFilter> = {
  RequestHeaderModifier: 'requestHeaderModifier',
  ResponseHeaderModifier: 'responseHeaderModifier',
  RequestRedirect: 'requestRedirect',
  URLRewrite: 'urlRewrite',
  CORS: 'cors',
  RequestMirror: 'requestMirror',
};

/** Filter types a rule may list more than once (HTTPRouteRequestMultipleMirrors). */
const REPEATABLE_FILTERS: ReadonlySet<string> = new Set(['RequestMirror']);

/** The CRD's CEL rules on a RequestMirror: one of percent and fraction, a fraction at most 1, a Service port. */
function mirrorErrors(m: RequestMirror, at: (string | number)[]): FieldError[] {
  const errors: FieldError[] = [];
  if (m.percent !== undefined && m.fraction !== undefined)
    errors.push({
      path: at,
      message: 'only one of percent or fraction may be specified in HTTPRequestMirrorFilter',
    });
  if (m.fraction !== undefined && m.fraction.numerator > m.fraction.denominator)
    errors.push({
      path: [...at, 'fraction'],
      message: 'numerator must be less than or equal to denominator',
    });
  const ref = m.backendRef;
  if (ref.group === '' && ref.kind === 'Service' && ref.port === undefined)
    errors.push({ path: [...at, 'backendRef', 'port'], message: 'required when kind is Service' });
  return errors;
}

/** The CORS filter's lists whose `*` must stand alone (the CRD's CEL rules). */
const CORS_WILDCARD_LISTS = ['allowOrigins', 'allowMethods', 'allowHeaders'] as const;

function filterErrors(
  filters: HTTPRouteFilter[],
  at: (string | number)[],
  pathPrefixOnly: boolean,
): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  filters.forEach((f, i) => {
    const field = FILTER_FIELDS[f.type];
    if (field !== undefined && f[field] === undefined) {
      errors.push({ path: [...at, i, field], message: `required when type is ${f.type}` });
    }
    if (f.requestMirror !== undefined)
      errors.push(...mirrorErrors(f.requestMirror, [...at, i, 'requestMirror']));
    if (f.type in FILTER_FIELDS && !REPEATABLE_FILTERS.has(f.type) && seen.has(f.type)) {
      errors.push({ path: [...at, i, 'type'], message: `${f.type} may appear only once` });
    }
    seen.add(f.type);
    for (const list of CORS_WILDCARD_LISTS) {
      const values: readonly string[] = f.cors?.[list] ?? [];
      if (values.includes('*') && values.length > 1)
        errors.push({
          path: [...at, i, 'cors', list],
          message: "'*' cannot be listed alongside other values",
        });
    }
    const path = f.requestRedirect?.path ?? f.urlRewrite?.path;
    const pathField = f.requestRedirect !== undefined ? 'requestRedirect' : 'urlRewrite';
    if (path !== undefined) {
      const valueField = path.type === 'ReplaceFullPath' ? 'replaceFullPath' : 'replacePrefixMatch';
      if (path[valueField] === undefined) {
        errors.push({
          path: [...at, i, pathField, 'path', valueField],
          message: `required when type is ${path.type}`,
        });
      }
      if (path.type === 'ReplacePrefixMatch' && !pathPrefixOnly) {
        errors.push({
          path: [...at, i, pathField, 'path', 'type'],
          message: 'ReplacePrefixMatch needs PathPrefix matches only',
        });
      }
    }
  });
  if (seen.has('RequestRedirect') && seen.has('URLRewrite')) {
    errors.push({ path: at, message: 'RequestRedirect and URLRewrite cannot be used together' });
  }
  return errors;
}

/** Milliseconds of a Gateway API Duration (`1h30m`, `500ms`), or undefined when malformed. */
export function durationMs(text: string): number | undefined {
  const re = /([0-9]{1,5})(h|ms|m|s)/gy;
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    const n = Number(m[1]);
    total += m[2] === 'h' ? n * 3_600_000 : m[2] === 'm' ? n * 60_000 : m[2] === 's' ? n * 1000 : n;
    consumed += m[0].length;
  }
  return consumed === text.length && text.length > 0 ? total : undefined;
}

/** Gateway API v1.7 (Standard): a rule name may appear once in a route (HTTPRoute and GRPCRoute alike). */
function ruleNameErrors(rules: readonly { name?: string }[]): FieldError[] {
  const first = new Map<string, number>();
  const errors: FieldError[] = [];
  rules.forEach((rule, i) => {
    if (rule.name === undefined) return;
    const earlier = first.get(rule.name);
    if (earlier === undefined) first.set(rule.name, i);
    else {
      errors.push({
        path: ['spec', 'rules', i, 'name'],
        message: `rule name must be unique within the route; same as rules[${earlier}]`,
      });
    }
  });
  return errors;
}

function httpRouteErrors(r: HTTPRoute): FieldError[] {
  const errors: FieldError[] = ruleNameErrors(r.spec.rules);
  r.spec.rules.forEach((rule, i) => {
    const at = ['spec', 'rules', i];
    rule.matches.forEach((m, j) => {
      if (m.path.type !== 'RegularExpression' && !m.path.value.startsWith('/')) {
        errors.push({ path: [...at, 'matches', j, 'path', 'value'], message: "must start with '/'" });
      }
    });
    const pathPrefixOnly = rule.matches.every((m) => m.path.type === 'PathPrefix');
    errors.push(...filterErrors(rule.filters, [...at, 'filters'], pathPrefixOnly));
    if (rule.filters.some((f) => f.type === 'RequestRedirect') && rule.backendRefs.length > 0) {
      errors.push({
        path: [...at, 'backendRefs'],
        message: 'must be empty when a RequestRedirect filter is used',
      });
    }
    errors.push(...backendRefErrors(rule.backendRefs, [...at, 'backendRefs'], pathPrefixOnly));
    const req = rule.timeouts?.request;
    const backend = rule.timeouts?.backendRequest;
    if (req !== undefined && backend !== undefined) {
      const reqMs = durationMs(req) ?? 0;
      const backendMs = durationMs(backend) ?? 0;
      if (reqMs !== 0 && backendMs > reqMs) {
        errors.push({
          path: [...at, 'timeouts', 'backendRequest'],
          message: 'must not be greater than timeouts.request',
        });
      }
    }
  });
  return errors;
}

function backendRefErrors(
  refs: Pick<BackendRef, 'group' | 'kind' | 'port' | 'filters'>[],
  at: (string | number)[],
  pathPrefixOnly: boolean,
): FieldError[] {
  const errors: FieldError[] = [];
  refs.forEach((b, k) => {
    if (b.group === '' && b.kind === 'Service' && b.port === undefined) {
      errors.push({ path: [...at, k, 'port'], message: 'required when kind is Service' });
    }
    errors.push(...filterErrors(b.filters, [...at, k, 'filters'], pathPrefixOnly));
  });
  return errors;
}

// The CRD's patterns for Exact service and method names (a gRPC path is `/<service>/<method>`).
const GRPC_SERVICE = /^\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$/i;
const GRPC_METHOD = /^[A-Za-z_][A-Za-z_0-9]*$/;

function methodMatchErrors(m: GRPCMethodMatch, at: (string | number)[]): FieldError[] {
  if (m.service === undefined && m.method === undefined) {
    return [{ path: at, message: "one or both of 'service' or 'method' must be specified" }];
  }
  if (m.type !== 'Exact') return [];
  const errors: FieldError[] = [];
  if (m.service !== undefined && !GRPC_SERVICE.test(m.service)) {
    errors.push({ path: [...at, 'service'], message: `must match ${GRPC_SERVICE.source}` });
  }
  if (m.method !== undefined && !GRPC_METHOD.test(m.method)) {
    errors.push({ path: [...at, 'method'], message: `must match ${GRPC_METHOD.source}` });
  }
  return errors;
}

function grpcRouteErrors(r: GRPCRoute): FieldError[] {
  const errors: FieldError[] = ruleNameErrors(r.spec.rules);
  r.spec.rules.forEach((rule, i) => {
    const at = ['spec', 'rules', i];
    rule.matches.forEach((m, j) => {
      if (m.method !== undefined)
        errors.push(...methodMatchErrors(m.method, [...at, 'matches', j, 'method']));
    });
    errors.push(...filterErrors(rule.filters, [...at, 'filters'], true));
    errors.push(...backendRefErrors(rule.backendRefs, [...at, 'backendRefs'], true));
  });
  return errors;
}

function backendTlsPolicyErrors(p: BackendTLSPolicy): FieldError[] {
  const errors: FieldError[] = [];
  const v = p.spec.validation;
  const refs = (v.caCertificateRefs ?? []).length > 0;
  const wellKnown = (v.wellKnownCACertificates ?? '') !== '';
  if (refs && wellKnown)
    errors.push({
      path: ['spec', 'validation'],
      message: 'must not contain both caCertificateRefs and wellKnownCACertificates',
    });
  if (!refs && !wellKnown)
    errors.push({
      path: ['spec', 'validation'],
      message: 'must specify either caCertificateRefs or wellKnownCACertificates',
    });
  (v.subjectAltNames ?? []).forEach((san, i) => {
    const at = ['spec', 'validation', 'subjectAltNames', i];
    const hostname = (san.hostname ?? '') !== '';
    const uri = (san.uri ?? '') !== '';
    if (san.type === 'Hostname' && !hostname)
      errors.push({ path: [...at, 'hostname'], message: 'required when type is Hostname' });
    if (san.type !== 'Hostname' && hostname)
      errors.push({ path: [...at, 'hostname'], message: 'must not be set unless type is Hostname' });
    if (san.type === 'URI' && !uri)
      errors.push({ path: [...at, 'uri'], message: 'required when type is URI' });
    if (san.type !== 'URI' && uri)
      errors.push({ path: [...at, 'uri'], message: 'must not be set unless type is URI' });
  });
  const targets = new Map<string, string>();
  p.spec.targetRefs.forEach((t, i) => {
    const key = `${t.group}|${t.kind}|${t.name}|${t.sectionName ?? ''}`;
    if (targets.has(key))
      errors.push({ path: ['spec', 'targetRefs', i], message: `duplicates targetRefs[${targets.get(key)}]` });
    else targets.set(key, String(i));
  });
  return errors;
}

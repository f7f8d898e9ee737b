// Structural validation of a FleetConfig received from outside (discovery, a file): a proxy must reject a bad
// config with an error naming the field, and keep serving the previous one.
import { PorticoError } from '../platform/errors.js';
import type { RejectedResource as BaseRejectedResource } from './apply-outcome.js';
import { MAX_EXTERNAL_AUTH_BODY_BYTES } from './external-auth.js';
import {
  authPathPrefixProblem,
  cidrProblem,
  cookieSecretProblem,
  corsOriginProblem,
  fetchUrlProblem,
  headerNameProblem,
  headerValueProblem,
  hostPortProblem,
  keySetProblem,
  MAX_TIMEOUT_MS,
  passwordHashProblem,
  pathProblem,
  preciseHostnameProblem,
  regexProblem,
  timeoutProblem,
  virtualHostnameProblem,
} from './field-rules.js';
import {
  FLEET_CONFIG_SCHEMA_VERSION,
  FLEET_RESOURCE_TYPES,
  type FleetConfig,
  type FleetResourceType,
} from './fleet-config.js';
import { type FleetConfigChange, nameIndex } from './fleet-config-patch.js';

type Check = (value: unknown, path: string) => void;

function fail(path: string, message: string): never {
  throw new PorticoError('E_FLEET_CONFIG', `${path}: ${message}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const str: Check = (v, p) => {
  if (typeof v !== 'string') fail(p, 'must be a string');
};
const nonEmpty: Check = (v, p) => {
  if (typeof v !== 'string' || v.length === 0) fail(p, 'must be a non-empty string');
};
const int =
  (min: number, max: number): Check =>
  (v, p) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      fail(p, `must be an integer from ${min} to ${max}`);
    }
  };
/** A share of requests: more than 0, at most 1. */
const share: Check = (v, p) => {
  if (typeof v !== 'number' || !(v > 0 && v <= 1)) fail(p, 'must be a number above 0 and at most 1');
};
const oneOf =
  (...allowed: readonly string[]): Check =>
  (v, p) => {
    if (typeof v !== 'string' || !allowed.includes(v)) fail(p, `must be one of ${allowed.join(', ')}`);
  };
const isTrue: Check = (v, p) => {
  if (v !== true) fail(p, 'must be true when present');
};
/** A check from the shared field rules (the translator applies the same ones). */
const rule =
  (problem: (value: string) => string | undefined): Check =>
  (v, p) => {
    if (typeof v !== 'string') fail(p, 'must be a string');
    const why = problem(v);
    if (why !== undefined) fail(p, why);
  };
const regex: Check = (v, p) => {
  nonEmpty(v, p);
  rule(regexProblem)(v, p);
};
const timeout: Check = (v, p) => {
  if (typeof v !== 'number' || timeoutProblem(v) !== undefined)
    fail(p, `must be an integer from 0 to ${MAX_TIMEOUT_MS}`);
};
const list =
  (item: Check): Check =>
  (v, p) => {
    if (!Array.isArray(v)) fail(p, 'must be a list');
    for (const [i, entry] of v.entries()) item(entry, `${p}[${i}]`);
  };
// Discovery keeps the parsed object of every unchanged resource from one config to the next: an object that
// passed once is not walked again (configs are immutable once built or received).
const remembered = (item: Check): Check => {
  const valid = new WeakSet<object>();
  return (v, p) => {
    if (isRecord(v) && valid.has(v)) return;
    item(v, p);
    if (isRecord(v)) valid.add(v);
  };
};
const optional =
  (check: Check): Check =>
  (v, p) => {
    if (v !== undefined) check(v, p);
  };
const object =
  (fields: Record<string, Check>): Check =>
  (v, p) => {
    if (!isRecord(v)) fail(p, 'must be an object');
    for (const [name, check] of Object.entries(fields)) check(v[name], p === '' ? name : `${p}.${name}`);
  };
/** A tagged union: the field `tag` selects the shape. */
const variant2 =
  (tag: string, shapes: Record<string, Record<string, Check>>): Check =>
  (v, p) => {
    if (!isRecord(v)) fail(p, 'must be an object');
    oneOf(...Object.keys(shapes))(v[tag], `${p}.${tag}`);
    object(shapes[v[tag] as string] ?? {})(v, p);
  };
/** A tagged union: `type` selects the shape. */
const variant = (shapes: Record<string, Record<string, Check>>): Check => variant2('type', shapes);

const headerName = rule(headerNameProblem);
// Header values travel on the wire as-is.
const headerValue = object({ name: headerName, value: rule(headerValueProblem) });
const hostname = rule(virtualHostnameProblem);
const preciseHostname = rule(preciseHostnameProblem);
const pathValue = rule(pathProblem);
const headerModifier = object({ set: list(headerValue), add: list(headerValue), remove: list(headerName) });
const pathModifier = variant({
  ReplaceFullPath: { value: pathValue },
  ReplacePrefixMatch: { value: pathValue },
});
const bool: Check = (v, p) => {
  if (typeof v !== 'boolean') fail(p, 'must be true or false');
};
/** A list whose `*` stands alone (the Gateway API's rule for CORS lists). */
const wildcardList =
  (item: Check): Check =>
  (v, p) => {
    list((entry, at) => {
      if (entry !== '*') item(entry, at);
    })(v, p);
    if ((v as unknown[]).includes('*') && (v as unknown[]).length > 1) fail(p, "'*' must stand alone");
  };
const cors = object({
  allowOrigins: wildcardList(rule(corsOriginProblem)),
  allowMethods: wildcardList(headerName),
  allowHeaders: wildcardList(headerName),
  exposeHeaders: wildcardList(headerName),
  maxAgeSeconds: int(0, 2_147_483_647),
  allowCredentials: bool,
});
const requestFilters = {
  RequestHeaderModifier: { headers: headerModifier },
  ResponseHeaderModifier: { headers: headerModifier },
  URLRewrite: { hostname: optional(preciseHostname), path: optional(pathModifier) },
};
const filter = variant(requestFilters);
const externalAuth = object({
  protocol: oneOf('HTTP', 'GRPC'),
  cluster: nonEmpty,
  allowedRequestHeaders: list(headerName),
  pathPrefix: rule(authPathPrefixProblem),
  allowedResponseHeaders: list(headerName),
  forwardBodyMaxBytes: int(0, MAX_EXTERNAL_AUTH_BODY_BYTES),
  timeoutMs: int(1, MAX_TIMEOUT_MS),
  failOpen: bool,
});
// CORS answers preflights, an authorization service decides, before a backend is chosen: a route's filters only.
/** A listener's pre-routing filter (GEP-5224): an authorization service only. */
const listenerRequestFilter = variant({ ExternalAuth: { auth: externalAuth, refused: optional(nonEmpty) } });
const routeFilter = variant({ ...requestFilters, CORS: { cors }, ExternalAuth: { auth: externalAuth } });
const valueMatch: Check = (v, p) => {
  object({ type: oneOf('Exact', 'RegularExpression'), name: nonEmpty, value: str })(v, p);
  const m = v as { type: string; value: string };
  if (m.type === 'RegularExpression') regex(m.value, `${p}.value`);
};
const pathMatch: Check = (v, p) => {
  variant({
    Exact: { value: nonEmpty },
    PathPrefix: { value: nonEmpty },
    RegularExpression: { value: regex },
  })(v, p);
  const m = v as { type: string; value: string };
  if (m.type !== 'RegularExpression' && !m.value.startsWith('/')) fail(`${p}.value`, "must start with '/'");
};
const action = variant({
  Forward: {
    backends: list(object({ weight: int(0, 1_000_000), cluster: optional(nonEmpty), filters: list(filter) })),
    // 0 is the Gateway API's "no timeout".
    timeoutMs: timeout,
    backendTimeoutMs: optional(timeout),
    retry: optional(
      object({ codes: list(int(400, 599)), attempts: int(0, 1_000_000), backoffMs: int(0, 3_600_000) }),
    ),
    mirrors: optional(list(object({ cluster: nonEmpty, fraction: share }))),
  },
  Redirect: {
    scheme: optional(oneOf('http', 'https')),
    hostname: optional(preciseHostname),
    path: optional(pathModifier),
    port: optional(int(1, 65535)),
    statusCode: (v, p) => {
      if (![301, 302, 303, 307, 308].includes(v as number)) fail(p, 'must be one of 301, 302, 303, 307, 308');
    },
  },
  DirectResponse: { status: int(200, 599) },
});
const names = list(nonEmpty);
const accessRule = object({
  name: nonEmpty,
  action: oneOf('Allow', 'Deny'),
  clientCidrs: optional(list(rule(cidrProblem))),
  methods: optional(list(headerName)),
  headers: optional(list(object({ name: headerName, value: optional(rule(headerValueProblem)) }))),
  claims: optional(list(object({ name: nonEmpty, values: list(str) }))),
  scopes: optional(list(nonEmpty)),
});
const tokenSource = variant({
  Header: { name: headerName, prefix: optional(str) },
  Cookie: { name: nonEmpty },
  QueryParameter: { name: nonEmpty },
});
const jwtProvider: Check = (v, p) => {
  object({
    name: nonEmpty,
    issuer: nonEmpty,
    audiences: list(nonEmpty),
    keys: optional(rule(keySetProblem)),
    remote: optional(object({ url: rule(fetchUrlProblem), cacheSeconds: int(1, 86_400) })),
    claimHeaders: list(object({ claim: nonEmpty, header: headerName })),
    requiredClaims: list(object({ name: nonEmpty, values: list(str) })),
  })(v, p);
  const provider = v as { keys?: string; remote?: unknown };
  if ((provider.keys === undefined) === (provider.remote === undefined))
    fail(p, 'must have exactly one of keys and remote');
};
const jwt = object({
  sources: list(tokenSource),
  maxTokenBytes: int(16, 65_536),
  providers: list(jwtProvider),
});
/** One member per policy kind (`kind` selects it). */
const policy = variant2('kind', {
  AccessPolicy: {
    name: nonEmpty,
    refused: optional(nonEmpty),
    jwt: optional(jwt),
    basicAuth: optional(
      object({ users: list(object({ user: nonEmpty, credentialDigest: rule(passwordHashProblem) })) }),
    ),
    apiKeys: optional(
      object({
        source: object({ type: oneOf('Header', 'QueryParameter'), name: nonEmpty }),
        credentialDigests: list(
          rule((d) => (/^[0-9a-f]{64}$/.test(d) ? undefined : 'must be a SHA-256 in hex')),
        ),
      }),
    ),
    rules: list(accessRule),
    defaultAction: oneOf('Allow', 'Deny'),
    oidc: optional(
      object({
        issuer: rule(fetchUrlProblem),
        clientId: nonEmpty,
        clientSecret: nonEmpty,
        redirectUri: nonEmpty,
        logoutPath: nonEmpty,
        postLogoutRedirectUri: optional(nonEmpty),
        scopes: list(nonEmpty),
        cookieName: nonEmpty,
        cookieSecret: rule(cookieSecretProblem),
        idTokenHeader: optional(headerName),
        forwardAccessToken: bool,
        sessionSeconds: int(1, 31_536_000),
        timeoutMs: int(1, 3_600_000),
      }),
    ),
    externalAuth: optional(externalAuth),
  },
});
const routeFields = object({
  name: nonEmpty,
  routeRef: object({
    kind: optional(oneOf('GRPCRoute', 'TLSRoute', 'TCPRoute', 'UDPRoute')),
    namespace: str,
    name: str,
    rule: int(0, 1_000_000),
  }),
  match: object({
    path: optional(pathMatch),
    headers: list(valueMatch),
    queryParams: list(valueMatch),
    method: optional(nonEmpty),
  }),
  filters: list(routeFilter),
  action,
  maxRequestBodyBytes: optional(int(0, Number.MAX_SAFE_INTEGER)),
  rateLimits: optional(
    list(
      object({
        name: nonEmpty,
        keys: list(
          variant({ ClientIp: {}, Header: { name: headerName }, Path: {}, Claim: { name: nonEmpty } }),
        ),
        limit: int(1, 1_000_000_000),
        periodSeconds: int(1, 86_400),
        scope: oneOf('Local', 'Global'),
        redis: optional(
          object({
            address: rule(hostPortProblem),
            password: optional(nonEmpty),
            tls: optional(object({ caPem: optional(nonEmpty), serverName: optional(nonEmpty) })),
            failureMode: oneOf('Open', 'Closed'),
            timeoutMs: int(1, 60_000),
          }),
        ),
      }),
    ),
  ),
  policies: optional(names),
});
const globalNeedsRedis: Check = (v, p) => {
  const rules = (v as { rateLimits?: { scope: string; redis?: unknown }[] }).rateLimits ?? [];
  for (const [i, r] of rules.entries())
    if (r.scope === 'Global' && r.redis === undefined)
      fail(`${p}.rateLimits[${i}].redis`, 'required when scope is Global');
};
const route: Check = (v, p) => {
  routeFields(v, p);
  globalNeedsRedis(v, p);
};
const clientIpPolicy = object({
  trustedCidrs: list(rule(cidrProblem)),
  trustedHops: optional(int(1, 64)),
  header: optional(headerName),
});
const listenerLimits = object({
  maxRequestBodyBytes: optional(int(0, Number.MAX_SAFE_INTEGER)),
  maxHeaderBytes: optional(int(1024, 1024 * 1024)),
  maxHeaders: optional(int(1, 10_000)),
  maxConnections: optional(int(0, 1_000_000)),
  maxUdpFlows: optional(int(1, 1_000_000)),
  udpFlowIdleTimeoutMs: optional(int(1, MAX_TIMEOUT_MS)),
  clientHelloMaxBytes: optional(int(512, 1024 * 1024)),
  tlsHandshakeTimeoutMs: optional(int(1, MAX_TIMEOUT_MS)),
  headerTimeoutMs: optional(int(1, MAX_TIMEOUT_MS)),
  idleTimeoutMs: optional(int(1, MAX_TIMEOUT_MS)),
});
/** One resource of each type; an object that passed once is not walked again (configs are immutable). */
const RESOURCE_CHECKS: Record<FleetResourceType, Check> = {
  gateways: remembered(
    object({
      name: nonEmpty,
      generation: int(0, Number.MAX_SAFE_INTEGER),
      backendClientCertificate: optional(nonEmpty),
    }),
  ),
  listeners: remembered((v, p) => {
    object({
      name: nonEmpty,
      port: int(1, 65535),
      protocol: oneOf('HTTP', 'HTTPS', 'TLS', 'TCP', 'UDP'),
      gatewayListeners: list(object({ gateway: str, listener: str })),
      tls: optional(
        object({
          certificates: list(
            object({ hostnames: list(nonEmpty), secrets: list(nonEmpty), passthrough: optional(isTrue) }),
          ),
          clientValidation: optional(
            object({ caPem: nonEmpty, mode: oneOf('AllowValidOnly', 'AllowInsecureFallback') }),
          ),
        }),
      ),
      clientIp: optional(clientIpPolicy),
      proxyProtocol: optional(object({ trustedCidrs: list(rule(cidrProblem)), timeoutMs: int(1, 60_000) })),
      limits: optional(listenerLimits),
    })(v, p);
    const l = v as {
      protocol: string;
      tls?: { certificates: { secrets: string[]; passthrough?: true }[] };
    };
    const withTls = l.protocol === 'HTTPS' || l.protocol === 'TLS';
    if (withTls && l.tls === undefined) fail(`${p}.tls`, `required when protocol is ${l.protocol}`);
    if (!withTls && l.tls !== undefined) fail(`${p}.tls`, `not allowed when protocol is ${l.protocol}`);
    for (const [j, c] of (l.tls?.certificates ?? []).entries()) {
      if (c.passthrough === true && (l.protocol !== 'TLS' || c.secrets.length > 0))
        fail(`${p}.tls.certificates[${j}].passthrough`, 'only on a TLS listener, with no secrets');
    }
  }),
  virtualHosts: remembered((v, p) => {
    object({
      name: nonEmpty,
      listener: nonEmpty,
      hostname,
      routes: list(route),
      policies: optional(names),
      requestFilters: optional(list(listenerRequestFilter)),
    })(v, p);
    // Its name says where it serves: one listener never has two VirtualHosts for one hostname.
    const vh = v as { name: string; listener: string; hostname: string };
    if (vh.name !== `${vh.listener}/${vh.hostname}`)
      fail(`${p}.name`, `must be '${vh.listener}/${vh.hostname}'`);
  }),
  clusters: remembered(
    object({
      name: nonEmpty,
      service: object({ namespace: str, name: str, port: int(1, 65535) }),
      protocol: oneOf('http', 'h2c', 'tcp', 'udp'),
      tls: optional(
        object({
          policy: nonEmpty,
          serverName: nonEmpty,
          caPem: optional(nonEmpty),
          subjectAltNames: list(object({ type: oneOf('Hostname', 'URI'), value: nonEmpty })),
          refused: optional(nonEmpty),
        }),
      ),
    }),
  ),
  endpoints: remembered(
    object({ name: nonEmpty, endpoints: list(object({ address: nonEmpty, port: int(1, 65535) })) }),
  ),
  secrets: remembered(object({ name: nonEmpty, certificatePem: nonEmpty, privateKeyPem: nonEmpty })),
  policies: remembered(policy),
};

const fleetConfig = object({
  fleet: nonEmpty,
  ...Object.fromEntries(FLEET_RESOURCE_TYPES.map((type) => [type, list(RESOURCE_CHECKS[type])])),
});

function uniqueNames(items: { name: string }[], path: string): void {
  // Strictly increasing names (the contract's order) are unique: no Set of thousands of names per apply.
  let sorted = true;
  for (let i = 1; i < items.length && sorted; i++) sorted = items[i - 1]!.name < items[i]!.name;
  if (sorted) return;
  const names = new Set<string>();
  items.forEach((item, i) => {
    if (names.has(item.name)) fail(`${path}[${i}].name`, `duplicate name '${item.name}'`);
    names.add(item.name);
  });
}

// A resource whose references were checked against these very lists (configs are immutable once received,
// and discovery keeps unchanged lists and objects) needs no second check: an edit re-checks what it changed.
const listenerCheckedAgainst = new WeakMap<object, object>();
const routesCheckedAgainst = new WeakMap<object, { clusters: object; listeners: object }>();

function lazyNames(items: { name: string }[]): () => Set<string> {
  let names: Set<string> | undefined;
  return () => {
    names ??= new Set(items.map((item) => item.name));
    return names;
  };
}

/** Checks references between resources, so the proxy never meets a dangling name at request time. */
function checkReferences(config: FleetConfig): void {
  uniqueNames(config.virtualHosts, 'virtualHosts');
  uniqueNames(config.clusters, 'clusters');
  uniqueNames(config.secrets, 'secrets');
  uniqueNames(config.endpoints, 'endpoints');
  uniqueNames(config.listeners, 'listeners');
  uniqueNames(config.policies, 'policies');
  const clusterNames = lazyNames(config.clusters);
  const secretNames = lazyNames(config.secrets);
  const listenerNames = lazyNames(config.listeners);
  const ports = new Set<number>();
  config.listeners.forEach((l, i) => {
    const p = `listeners[${i}]`;
    if (ports.has(l.port)) fail(`${p}.port`, `port ${l.port} used by two listeners`);
    ports.add(l.port);
    if (listenerCheckedAgainst.get(l) === config.secrets) return;
    const secrets = secretNames();
    for (const [j, c] of (l.tls?.certificates ?? []).entries()) {
      for (const [k, s] of c.secrets.entries()) {
        if (!secrets.has(s)) fail(`${p}.tls.certificates[${j}].secrets[${k}]`, `unknown secret '${s}'`);
      }
    }
    listenerCheckedAgainst.set(l, config.secrets);
  });
  for (const [i, v] of config.virtualHosts.entries()) {
    const checked = routesCheckedAgainst.get(v);
    if (checked?.clusters === config.clusters && checked.listeners === config.listeners) continue;
    if (!listenerNames().has(v.listener))
      fail(`virtualHosts[${i}].listener`, `unknown listener '${v.listener}'`);
    const clusters = clusterNames();
    for (const [j, r] of v.routes.entries()) {
      if (r.action.type !== 'Forward') continue;
      for (const [k, b] of r.action.backends.entries()) {
        if (b.cluster !== undefined && !clusters.has(b.cluster)) {
          fail(
            `virtualHosts[${i}].routes[${j}].action.backends[${k}].cluster`,
            `unknown cluster '${b.cluster}'`,
          );
        }
      }
      for (const [k, m] of (r.action.mirrors ?? []).entries()) {
        if (!clusters.has(m.cluster)) {
          fail(
            `virtualHosts[${i}].routes[${j}].action.mirrors[${k}].cluster`,
            `unknown cluster '${m.cluster}'`,
          );
        }
      }
    }
    routesCheckedAgainst.set(v, { clusters: config.clusters, listeners: config.listeners });
  }
}

function checkRoot(value: unknown): asserts value is Record<string, unknown> {
  if (!isRecord(value)) fail('(root)', 'fleet config must be an object');
  if (value.schemaVersion !== FLEET_CONFIG_SCHEMA_VERSION) {
    fail(
      'schemaVersion',
      `must be ${FLEET_CONFIG_SCHEMA_VERSION} (got ${JSON.stringify(value.schemaVersion)})`,
    );
  }
}

/** Every field and reference must be right: the whole config is refused otherwise (config files, tests). */
export function validateFleetConfig(value: unknown): FleetConfig {
  checkRoot(value);
  fleetConfig(value, '');
  const config = value as unknown as FleetConfig;
  checkReferences(config);
  return config;
}

/** A resource validation refused (its type one the proxy knows). */
export type RejectedResource = BaseRejectedResource & { type: FleetResourceType };

function nameOf(item: unknown, index: number): string {
  const name = isRecord(item) ? item.name : undefined;
  return typeof name === 'string' && name !== '' ? name : `#${index}`;
}

/**
 * Validates resource by resource, for configs from discovery: a resource that breaks a rule is rejected alone and
 * `previous` (the config in force, already valid) supplies its last good version; everything else applies, so one
 * bad resource never blocks unrelated changes. Only a config that is not one at all (no object, another schema
 * version, a list that is not a list) throws. Lists without a rejection are returned as they came (same arrays).
 * References to a resource left out are inert at request time: an unknown virtual host is not served, an unknown
 * cluster answers 503, an unknown secret fails its listener's TLS setup (reported as a listener error).
 */
export function validateFleetResources(
  value: unknown,
  previous?: FleetConfig,
  change?: FleetConfigChange,
): { config: FleetConfig; rejected: RejectedResource[] } {
  checkRoot(value);
  nonEmpty(value.fleet, 'fleet');
  // How `value` came from `previous` (valid, in force): only the resources it names need a look.
  const known =
    change !== undefined &&
    previous !== undefined &&
    change.since === previous &&
    (change.config as unknown) === value;
  const rejected: RejectedResource[] = [];
  const replaced: Partial<Record<FleetResourceType, unknown[]>> = {};
  for (const type of FLEET_RESOURCE_TYPES) {
    const items: unknown = value[type];
    if (!Array.isArray(items)) fail(type, 'must be a list');
    const out = known
      ? changedItemsChecked(type, items, previous, change, rejected)
      : itemsChecked(type, items, previous, rejected);
    if (out !== undefined) replaced[type] = out;
  }
  const config = (rejected.length === 0 ? value : { ...value, ...replaced }) as unknown as FleetConfig;
  return { config, rejected };
}

/** The last good version of a refused resource, if `previous` had one. */
function lastGoodOf(previous: FleetConfig | undefined, type: FleetResourceType, name: string): unknown {
  return (previous?.[type] as { name: string }[] | undefined)?.find((p) => p.name === name);
}

/** Every item of the list checked; the list with refused items replaced, or undefined when none was. */
function itemsChecked(
  type: FleetResourceType,
  items: unknown[],
  previous: FleetConfig | undefined,
  rejected: RejectedResource[],
): unknown[] | undefined {
  const check = RESOURCE_CHECKS[type];
  const seen = new Set<string>();
  let out: unknown[] | undefined;
  let ports: Set<number> | undefined;
  for (const [i, item] of items.entries()) {
    const name = nameOf(item, i);
    let error: string | undefined;
    try {
      check(item, `${type}[${i}]`);
      if (seen.has(name)) error = `${type}[${i}].name: duplicate name '${name}'`;
      if (type === 'listeners') {
        ports ??= new Set();
        const port = (item as { port: number }).port;
        if (ports.has(port)) error = `${type}[${i}].port: port ${port} used by two listeners`;
        ports.add(port);
      }
    } catch (e) {
      error = (e as Error).message;
    }
    seen.add(name);
    if (error === undefined) {
      out?.push(item);
      continue;
    }
    rejected.push({ type, name, error });
    out ??= items.slice(0, i);
    const lastGood = lastGoodOf(previous, type, name);
    if (lastGood !== undefined && !out.includes(lastGood)) out.push(lastGood);
  }
  return out;
}

/**
 * Only the items `change` names checked (the others are the objects of the valid config in force, and a patch
 * keeps names unique and sorted); listeners, being few and sharing ports, are checked whole when one changed.
 */
function changedItemsChecked(
  type: FleetResourceType,
  items: unknown[],
  previous: FleetConfig,
  change: FleetConfigChange,
  rejected: RejectedResource[],
): unknown[] | undefined {
  if (items === previous[type]) return undefined;
  if (type === 'listeners') return itemsChecked(type, items, previous, rejected);
  const check = RESOURCE_CHECKS[type];
  let out: unknown[] | undefined;
  for (const { type: t, name } of change.changed) {
    if (t !== type) continue;
    const at = nameIndex(items as { name: string }[], name);
    const item = items[at];
    if (nameOf(item, at) !== name) continue;
    try {
      check(item, `${type}[${at}]`);
    } catch (e) {
      rejected.push({ type, name, error: (e as Error).message });
      out ??= items.slice();
      const lastGood = lastGoodOf(previous, type, name);
      const i = out.indexOf(item);
      if (lastGood === undefined) out.splice(i, 1);
      else out[i] = lastGood;
    }
  }
  return out;
}

// Structural validation of a FleetConfig received from outside (discovery, a file): a proxy must reject a bad
// config with an error naming the field, and keep serving the previous one.
import { PorticoError } from '../errors.js';
import { FLEET_CONFIG_SCHEMA_VERSION, type FleetConfig } from './fleet-config.js';

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
const oneOf =
  (...allowed: readonly string[]): Check =>
  (v, p) => {
    if (typeof v !== 'string' || !allowed.includes(v)) fail(p, `must be one of ${allowed.join(', ')}`);
  };
const regex: Check = (v, p) => {
  nonEmpty(v, p);
  try {
    new RegExp(v as string);
  } catch (error) {
    fail(p, `invalid regular expression: ${(error as Error).message}`);
  }
};
const list =
  (item: Check): Check =>
  (v, p) => {
    if (!Array.isArray(v)) fail(p, 'must be a list');
    for (const [i, entry] of v.entries()) item(entry, `${p}[${i}]`);
  };
// Discovery keeps the parsed object of every unchanged resource from one config to the next: an object that
// passed once is not walked again (configs are immutable once built or received).
const resourceList = (item: Check): Check => {
  const valid = new WeakSet<object>();
  return (v, p) => {
    if (!Array.isArray(v)) fail(p, 'must be a list');
    for (const [i, entry] of v.entries()) {
      if (isRecord(entry) && valid.has(entry)) continue;
      item(entry, `${p}[${i}]`);
      if (isRecord(entry)) valid.add(entry);
    }
  };
};
/** A list of non-empty strings, checked without building a path per item (a listener names thousands). */
const nameList: Check = (v, p) => {
  if (!Array.isArray(v)) fail(p, 'must be a list');
  for (let i = 0; i < v.length; i++) {
    const item: unknown = v[i];
    if (typeof item !== 'string' || item.length === 0) fail(`${p}[${i}]`, 'must be a non-empty string');
  }
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
/** A tagged union: `type` selects the shape. */
const variant =
  (shapes: Record<string, Record<string, Check>>): Check =>
  (v, p) => {
    if (!isRecord(v)) fail(p, 'must be an object');
    oneOf(...Object.keys(shapes))(v.type, `${p}.type`);
    object(shapes[v.type as string] ?? {})(v, p);
  };

const headerName: Check = (v, p) => {
  if (typeof v !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(v))
    fail(p, 'must be a valid header name');
};
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return true;
  }
  return false;
}
const headerText: Check = (v, p) => {
  // Header values travel on the wire as-is: no line breaks or control characters (tab is allowed).
  if (typeof v !== 'string' || hasControlCharacter(v))
    fail(p, 'must be a header value without control characters');
};
const headerValue = object({ name: headerName, value: headerText });
const hostname: Check = (v, p) => {
  if (
    typeof v !== 'string' ||
    !/^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*)$/.test(v)
  ) {
    fail(p, 'must be a DNS hostname');
  }
};
const pathValue: Check = (v, p) => {
  if (typeof v !== 'string' || !v.startsWith('/') || /\s/.test(v) || hasControlCharacter(v)) {
    fail(p, "must be a path starting with '/' without spaces");
  }
};
const headerModifier = object({ set: list(headerValue), add: list(headerValue), remove: list(headerName) });
const pathModifier = variant({
  ReplaceFullPath: { value: pathValue },
  ReplacePrefixMatch: { value: pathValue },
});
const filter = variant({
  RequestHeaderModifier: { headers: headerModifier },
  ResponseHeaderModifier: { headers: headerModifier },
  URLRewrite: { hostname: optional(hostname), path: optional(pathModifier) },
});
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
    timeoutMs: int(0, 86_400_000),
    backendTimeoutMs: optional(int(0, 86_400_000)),
  },
  Redirect: {
    scheme: optional(oneOf('http', 'https')),
    hostname: optional(hostname),
    path: optional(pathModifier),
    port: optional(int(1, 65535)),
    statusCode: (v, p) => {
      if (![301, 302, 303, 307, 308].includes(v as number)) fail(p, 'must be one of 301, 302, 303, 307, 308');
    },
  },
  DirectResponse: { status: int(200, 599) },
});
const route = object({
  name: nonEmpty,
  routeRef: object({ namespace: str, name: str, rule: int(0, 1_000_000) }),
  match: object({
    path: optional(pathMatch),
    headers: list(valueMatch),
    queryParams: list(valueMatch),
    method: optional(nonEmpty),
  }),
  filters: list(filter),
  action,
});
const fleetConfig = object({
  fleet: nonEmpty,
  gateways: resourceList(object({ name: nonEmpty, generation: int(0, Number.MAX_SAFE_INTEGER) })),
  listeners: resourceList(
    object({
      name: nonEmpty,
      port: int(1, 65535),
      protocol: oneOf('HTTP', 'HTTPS'),
      gatewayListeners: list(object({ gateway: str, listener: str })),
      virtualHosts: nameList,
      tls: optional(
        object({ certificates: list(object({ hostnames: list(nonEmpty), secrets: list(nonEmpty) })) }),
      ),
    }),
  ),
  virtualHosts: resourceList(object({ name: nonEmpty, hostname, routes: list(route) })),
  clusters: resourceList(
    object({
      name: nonEmpty,
      service: object({ namespace: str, name: str, port: int(1, 65535) }),
      protocol: oneOf('http'),
    }),
  ),
  endpoints: resourceList(
    object({ name: nonEmpty, endpoints: list(object({ address: nonEmpty, port: int(1, 65535) })) }),
  ),
  secrets: resourceList(object({ name: nonEmpty, certificatePem: nonEmpty, privateKeyPem: nonEmpty })),
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
const listenerCheckedAgainst = new WeakMap<object, { vhosts: object; secrets: object }>();
const routesCheckedAgainst = new WeakMap<object, object>();

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
  const vhostNames = lazyNames(config.virtualHosts);
  const clusterNames = lazyNames(config.clusters);
  const secretNames = lazyNames(config.secrets);
  const ports = new Set<number>();
  config.listeners.forEach((l, i) => {
    const p = `listeners[${i}]`;
    if (ports.has(l.port)) fail(`${p}.port`, `port ${l.port} used by two listeners`);
    ports.add(l.port);
    const checked = listenerCheckedAgainst.get(l);
    if (checked?.vhosts === config.virtualHosts && checked.secrets === config.secrets) return;
    const vhosts = vhostNames();
    const secrets = secretNames();
    l.virtualHosts.forEach((v, j) => {
      if (!vhosts.has(v)) fail(`${p}.virtualHosts[${j}]`, `unknown virtual host '${v}'`);
    });
    if (l.protocol === 'HTTPS' && l.tls === undefined) fail(`${p}.tls`, 'required when protocol is HTTPS');
    for (const [j, c] of (l.tls?.certificates ?? []).entries()) {
      for (const [k, s] of c.secrets.entries()) {
        if (!secrets.has(s)) fail(`${p}.tls.certificates[${j}].secrets[${k}]`, `unknown secret '${s}'`);
      }
    }
    listenerCheckedAgainst.set(l, { vhosts: config.virtualHosts, secrets: config.secrets });
  });
  for (const [i, v] of config.virtualHosts.entries()) {
    if (routesCheckedAgainst.get(v) === config.clusters) continue;
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
    }
    routesCheckedAgainst.set(v, config.clusters);
  }
}

export function validateFleetConfig(value: unknown): FleetConfig {
  if (!isRecord(value)) fail('(root)', 'fleet config must be an object');
  if (value.schemaVersion !== FLEET_CONFIG_SCHEMA_VERSION) {
    fail(
      'schemaVersion',
      `must be ${FLEET_CONFIG_SCHEMA_VERSION} (got ${JSON.stringify(value.schemaVersion)})`,
    );
  }
  fleetConfig(value, '');
  const config = value as unknown as FleetConfig;
  checkReferences(config);
  return config;
}

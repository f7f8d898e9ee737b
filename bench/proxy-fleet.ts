// What the HTTP/1.1 proxy benches serve: one route to the backend, the script that runs Portico from a build on
// a fixed port (workers bind it too), and nginx's same proxy; shared by bench/proxy.ts and
// bench/proxy-instructions.ts.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ExternalAuthorization } from '../src/ir/external-auth.js';
import { FLEET_CONFIG_SCHEMA_VERSION, type FleetConfig, type FleetPolicy } from '../src/ir/fleet-config.js';

/** Portico from the build, on a fixed port (workers bind it too) with its metrics on another. */
export const STATIC_PROXY = `
const [configFile, entry, workers, port, accessLogFile] = process.argv.slice(1);
const { runStaticProxy } = await import(entry);
// Its lines on stderr, as \`portico proxy\` writes them: the ports are read from them. Callable as well, for a
// --baseline build from before the one logger shape (it took a function).
const line = (text) => console.error(text);
const log = Object.assign(line, { debug: () => {}, info: line, warn: line, error: line });
const { openSync, writeSync } = await import('node:fs');
// The access log as \`portico proxy\` writes it by default (JSON, every field), into a file instead of a pipe.
const fd = accessLogFile === undefined ? undefined : openSync(accessLogFile, 'a');
const fields = ['start_time', 'method', 'authority', 'path', 'protocol', 'status', 'response_flags', 'bytes_received',
  'bytes_sent', 'duration_ms', 'upstream_host', 'upstream_service_time_ms', 'route_name', 'listener', 'request_id',
  'client_address'];
process.exitCode = await runStaticProxy(configFile, {
  bindAddress: '127.0.0.1', portOffset: Number(port) - 80, drainMs: 0, workers: Number(workers),
  metricsAddress: '127.0.0.1:0',
  log,
  ...(fd === undefined ? {} : { accessLog: { format: 'json', fields, sampling: 1, write: (t) => writeSync(fd, t) } }),
});
`;

/**
 * `config` as the build at `build` (a checkout built with `npm run build`) reads it: with its own fleet config
 * schema version, for a `--baseline` build from before a version raise (the routes the benches use kept their shape).
 */
export async function configForBuild<C extends { schemaVersion: number }>(
  build: string,
  config: C,
): Promise<C> {
  const { FLEET_CONFIG_SCHEMA_VERSION: version } = (await import(
    pathToFileURL(join(build, 'dist/ir/fleet-config.js')).href
  )) as { FLEET_CONFIG_SCHEMA_VERSION: number };
  return { ...config, schemaVersion: version };
}

/** The route, with `policy` on it when given (the JWT bench's). */
export function fleetConfig(backendPort: number, policy?: FleetPolicy): FleetConfig {
  const config = fleetConfigWithout(backendPort);
  if (policy === undefined) return config;
  const [vhost] = config.virtualHosts;
  const [route] = vhost!.routes;
  return {
    ...config,
    virtualHosts: [{ ...vhost!, routes: [{ ...route!, policies: [policy.name] }] }],
    policies: [policy],
  };
}

function fleetConfigWithout(backendPort: number): FleetConfig {
  return {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet: 'bench/eg',
    gateways: [{ name: 'bench/eg', generation: 1 }],
    listeners: [
      {
        name: 'port-80',
        port: 80,
        protocol: 'HTTP',
        gatewayListeners: [],
      },
    ],
    virtualHosts: [
      {
        name: 'port-80/bench.test',
        listener: 'port-80',
        hostname: 'bench.test',
        routes: [
          {
            name: 'bench/route/rule/0/match/0',
            routeRef: { namespace: 'bench', name: 'route', rule: 0 },
            match: { path: { type: 'PathPrefix', value: '/' }, headers: [], queryParams: [] },
            filters: [],
            action: {
              type: 'Forward',
              backends: [{ weight: 1, cluster: 'bench/backend:80', filters: [] }],
              timeoutMs: 15000,
            },
          },
        ],
      },
    ],
    clusters: [
      {
        name: 'bench/backend:80',
        service: { namespace: 'bench', name: 'backend', port: 80 },
        protocol: 'http',
      },
    ],
    endpoints: [{ name: 'bench/backend:80', endpoints: [{ address: '127.0.0.1', port: backendPort }] }],
    secrets: [],
    policies: [],
  };
}

/** nginx's `http { }` body: the same proxy on `port`, upstream connections kept alive. */
export function nginxH1(backendPort: number, port: number): string {
  return `  upstream backend { server 127.0.0.1:${backendPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }`;
}

/**
 * The same route with one rate limit that never refuses (a billion per second, one key: the client address), so
 * what is measured is the decision's cost: Local (this proxy's buckets) or Global (the Redis at `redisAddress`).
 */
export function rateLimitedFleetConfig(
  backendPort: number,
  scope: 'Local' | 'Global',
  redisAddress?: string,
): FleetConfig {
  const config = fleetConfig(backendPort);
  const route = config.virtualHosts[0]!.routes[0]!;
  route.rateLimits = [
    {
      name: `bench/${scope.toLowerCase()}/per-client`,
      keys: [{ type: 'ClientIp' }],
      limit: 1_000_000_000,
      periodSeconds: 1,
      scope,
      ...(redisAddress === undefined
        ? {}
        : { redis: { address: redisAddress, failureMode: 'Open' as const, timeoutMs: 1_000 } }),
    },
  ];
  return config;
}

/**
 * An AccessPolicy asking for a JWT (RS256, keys inline), and a token it takes: what the JWT bench adds to the
 * same route. Both Portico targets of that phase get the token, so the difference is the verification alone
 * (of a token the proxy has verified before); `tokens` makes as many distinct ones as a run needs to miss that.
 */
export async function jwtBench(): Promise<{
  policy: FleetPolicy;
  token: string;
  /** `count` distinct tokens the policy takes (each its own `jti`). */
  tokens: (count: number) => Promise<string[]>;
}> {
  const { exportJWK, generateKeyPair, SignJWT } = await import('jose');
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256' };
  const sign = (jti?: string) =>
    new SignJWT({ sub: 'bench', scope: 'read', ...(jti === undefined ? {} : { jti }) })
      .setProtectedHeader({ alg: 'RS256', kid: 'bench' })
      .setIssuer('https://issuer.bench.test')
      .setAudience('bench')
      .setExpirationTime('2h')
      .sign(privateKey);
  const token = await sign();
  const tokens = (count: number) => Promise.all(Array.from({ length: count }, (_, i) => sign(`t${i}`)));
  const policy: FleetPolicy = {
    name: 'AccessPolicy bench/jwt',
    kind: 'AccessPolicy',
    jwt: {
      sources: [{ type: 'Header', name: 'authorization', prefix: 'Bearer ' }],
      maxTokenBytes: 8192,
      providers: [
        {
          name: 'bench',
          issuer: 'https://issuer.bench.test',
          audiences: ['bench'],
          keys: JSON.stringify({ keys: [jwk] }),
          claimHeaders: [{ claim: 'sub', header: 'x-user' }],
          requiredClaims: [],
        },
      ],
    },
    rules: [],
    defaultAction: 'Allow',
  };
  return { policy, token, tokens };
}

/**
 * The route behind an ExternalAuth filter (HTTP forward-auth) whose service on `authPort` lets every request
 * pass: the cost of one authorization call per request.
 */
export function externalAuthFleetConfig(backendPort: number, authPort: number): FleetConfig {
  const config = fleetConfigWithout(backendPort);
  const auth: ExternalAuthorization = {
    protocol: 'HTTP',
    cluster: 'bench/auth:80',
    allowedRequestHeaders: [],
    pathPrefix: '/verify',
    allowedResponseHeaders: [],
    forwardBodyMaxBytes: 0,
    timeoutMs: 5000,
    failOpen: false,
  };
  const [vhost] = config.virtualHosts;
  const [route] = vhost!.routes;
  return {
    ...config,
    virtualHosts: [{ ...vhost!, routes: [{ ...route!, filters: [{ type: 'ExternalAuth', auth }] }] }],
    clusters: [
      { name: 'bench/auth:80', service: { namespace: 'bench', name: 'auth', port: 80 }, protocol: 'http' },
      ...config.clusters,
    ],
    endpoints: [
      { name: 'bench/auth:80', endpoints: [{ address: '127.0.0.1', port: authPort }] },
      ...config.endpoints,
    ],
  };
}

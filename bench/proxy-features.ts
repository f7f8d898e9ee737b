// Route-feature half of `npm run bench:proxy`: what a CORS filter, a retry policy and a request mirror cost,
// Portico (1 worker) next to nginx (1 worker) configured to do the same, in front of the same node:http
// backends, driven by the same wrk, in the same run. Each scenario is one path of one proxy process per peer;
// rounds interleave the two, and the median round is printed with its CPU per request over each proxy's
// processes (the backends' CPU is left out: both peers make them do the same work).
//   - plain: GET forwarded, nothing else (each feature's cost is read against it);
//   - CORS preflight: OPTIONS with Origin and Access-Control-Request-Method, answered by the proxy itself (Portico
//     200, as Gateway API's CORS tests expect; nginx 204 as configured here);
//   - CORS actual: GET with an allowed Origin, forwarded, CORS headers added to the answer;
//   - retry, unused: a retry policy on a backend that never fails (the policy's cost when nothing is retried);
//   - retry, half failing: two endpoints, one always 503: a request sent to it first is retried on the other;
//   - mirror: every request also copied to a second backend, the copy's answer thrown away.
// Options: --rounds N (default 5), --seconds N per round (default 2), --install on|off (apt-get wrk and nginx
// when missing; default on, see peers.ts).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { FleetConfig, Route, RouteFilter } from '../src/ir/fleet-config.js';
import { closedLoopWrk, type LoadResult, median, type WrkRequest } from './load.js';
import { startNginx } from './nginx.js';
import { ensurePeers, installFlag, NGINX, WRK } from './peers.js';
import { children, cpuMicrosOf, freePort, processTree, startChild } from './processes.js';
import { fleetConfig, STATIC_PROXY } from './proxy-fleet.js';

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '2' },
    install: { type: 'string' },
  },
});
const ROUNDS = Number(flags.rounds);
const SECONDS = Number(flags.seconds);
const CONNECTIONS = 50;
const here = fileURLToPath(new URL('.', import.meta.url));
const ORIGIN = 'https://app.bench.test';

interface Scenario {
  name: string;
  path: string;
  sent: WrkRequest;
  headers: Record<string, string>;
  /** The status every answer must have, and a header it must carry (checked once per target before measuring). */
  expect: { statuses: number[]; header?: string };
}

const SCENARIOS: Scenario[] = [
  { name: 'plain', path: '/plain', sent: {}, headers: {}, expect: { statuses: [200] } },
  {
    name: 'CORS preflight',
    path: '/cors',
    sent: { method: 'OPTIONS' },
    headers: { origin: ORIGIN, 'access-control-request-method': 'PUT' },
    expect: { statuses: [200, 204], header: 'access-control-allow-origin' },
  },
  {
    name: 'CORS actual',
    path: '/cors',
    sent: {},
    headers: { origin: ORIGIN },
    expect: { statuses: [200], header: 'access-control-allow-origin' },
  },
  { name: 'retry, unused', path: '/retry-unused', sent: {}, headers: {}, expect: { statuses: [200] } },
  { name: 'retry, half failing', path: '/retry', sent: {}, headers: {}, expect: { statuses: [200] } },
  { name: 'mirror', path: '/mirror', sent: {}, headers: {}, expect: { statuses: [200] } },
];

interface Target {
  name: string;
  port: number;
  pids: () => number[];
  metricsPort?: number;
}

interface Backends {
  ok: number;
  failing: number;
  mirror: number;
}

/** Portico's routes: one per scenario path, each a copy of the plain route with its feature. */
function porticoConfig(backends: Backends): FleetConfig {
  const config = fleetConfig(backends.ok);
  const plain = config.virtualHosts[0]!.routes[0]!;
  const forward = plain.action.type === 'Forward' ? plain.action : undefined;
  if (forward === undefined) throw new Error('the plain route does not forward');
  const route = (path: string, change: Partial<Route> = {}, action = forward): Route => ({
    ...plain,
    name: `bench${path}/rule/0/match/0`,
    routeRef: { namespace: 'bench', name: path.slice(1), rule: 0 },
    match: { ...plain.match, path: { type: 'PathPrefix', value: path } },
    ...change,
    action,
  });
  const cors: RouteFilter = {
    type: 'CORS',
    cors: {
      allowOrigins: [ORIGIN],
      allowMethods: ['GET', 'PUT'],
      allowHeaders: ['x-token'],
      exposeHeaders: [],
      maxAgeSeconds: 600,
      allowCredentials: false,
    },
  };
  const retry = { codes: [503], attempts: 1, backoffMs: 0 };
  const flaky = { weight: 1, cluster: 'bench/flaky:80', filters: [] };
  const cluster = (name: string) => ({
    name: `bench/${name}:80`,
    service: { namespace: 'bench', name, port: 80 },
    protocol: 'http' as const,
  });
  config.virtualHosts[0]!.routes = [
    route('/plain'),
    route('/cors', { filters: [cors] }),
    route('/retry-unused', {}, { ...forward, retry }),
    route('/retry', {}, { ...forward, backends: [flaky], retry }),
    route('/mirror', {}, { ...forward, mirrors: [{ cluster: 'bench/mirror:80', fraction: 1 }] }),
  ];
  config.clusters.push(cluster('flaky'), cluster('mirror'));
  config.endpoints.push(
    {
      name: 'bench/flaky:80',
      endpoints: [
        { address: '127.0.0.1', port: backends.failing },
        { address: '127.0.0.1', port: backends.ok },
      ],
    },
    { name: 'bench/mirror:80', endpoints: [{ address: '127.0.0.1', port: backends.mirror }] },
  );
  return config;
}

/** nginx doing the same per path (CORS by `map`, retries by proxy_next_upstream, the mirror module). */
function nginxHttp(backends: Backends, port: number): string {
  const upstream = 'proxy_http_version 1.1; proxy_set_header Connection "";';
  return `  upstream backend { server 127.0.0.1:${backends.ok}; keepalive 128; }
  # max_fails=0: nginx would otherwise stop sending to the failing server for 10 s after one 503.
  upstream flaky { server 127.0.0.1:${backends.failing} max_fails=0; server 127.0.0.1:${backends.ok} max_fails=0; keepalive 128; }
  upstream mirror { server 127.0.0.1:${backends.mirror}; keepalive 128; }
  map $http_origin $cors_origin { default ""; "${ORIGIN}" $http_origin; }
  server {
    listen 127.0.0.1:${port};
    location /plain { proxy_pass http://backend; ${upstream} }
    location /cors {
      if ($request_method = OPTIONS) {
        add_header Access-Control-Allow-Origin $cors_origin;
        add_header Access-Control-Allow-Methods "GET, PUT";
        add_header Access-Control-Allow-Headers "x-token";
        add_header Access-Control-Max-Age 600;
        add_header Vary Origin;
        return 204;
      }
      add_header Access-Control-Allow-Origin $cors_origin always;
      add_header Vary Origin always;
      proxy_pass http://backend; ${upstream}
    }
    location /retry-unused { proxy_pass http://backend; proxy_next_upstream error timeout http_503; proxy_next_upstream_tries 2; ${upstream} }
    location /retry { proxy_pass http://flaky; proxy_next_upstream error timeout http_503; proxy_next_upstream_tries 2; ${upstream} }
    location /mirror { mirror /_mirror; proxy_pass http://backend; ${upstream} }
    location = /_mirror { internal; proxy_pass http://mirror$request_uri; ${upstream} }
  }`;
}

/** One request of the scenario, checked for its status and header: a peer configured wrong is not measured. */
function check(target: Target, scenario: Scenario): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: target.port,
        path: scenario.path,
        method: scenario.sent.method ?? 'GET',
        headers: { host: 'bench.test', ...scenario.headers },
      },
      (res) => {
        res.resume();
        const { statuses, header } = scenario.expect;
        const missing = header !== undefined && res.headers[header] === undefined;
        if (statuses.includes(res.statusCode ?? 0) && !missing) resolve();
        else
          reject(
            new Error(
              `${target.name}, ${scenario.name}: got ${res.statusCode}${missing ? ` without ${header}` : ''}`,
            ),
          );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** The scenario's rounds on both targets, interleaved; each target's median round (by req/s). */
async function measure(scenario: Scenario, targets: Target[]): Promise<Map<string, LoadResult>> {
  const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
  const load = (t: Target, seconds: number) =>
    closedLoopWrk(t.port, CONNECTIONS, seconds, scenario.headers, 'http', {
      ...scenario.sent,
      path: scenario.path,
    });
  for (const t of targets) await load(t, 1);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const target of order) {
      const pids = target.pids();
      const before = cpuMicrosOf(pids);
      const result = await load(target, SECONDS);
      const after = cpuMicrosOf(pids);
      if (before !== undefined && after !== undefined)
        result.cpuUsPerRequest = (after - before) / (result.requestsPerSecond * SECONDS);
      runs.get(target.name)!.push(result);
    }
  }
  const medians = new Map<string, LoadResult>();
  for (const [name, all] of runs) {
    const sorted = [...all].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
    medians.set(name, {
      ...sorted[Math.floor(sorted.length / 2)]!,
      cpuUsPerRequest: median(all.map((r) => r.cpuUsPerRequest ?? Number.NaN)),
      errors: all.reduce((sum, r) => sum + r.errors, 0),
    });
  }
  return medians;
}

/** A counter's value summed over its series whose labels include `labels`, from a Portico metrics port. */
async function counterSum(port: number, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm')))
    if (m[1]!.includes(labels)) sum += Number(m[2]);
  return sum;
}

function print(results: Map<string, Map<string, LoadResult>>, portico: Target, nginx: Target): void {
  const plain = results.get('plain')!;
  console.log(
    `\n  ${'scenario'.padEnd(20)} ${'portico req/s'.padStart(13)} ${'µs/req'.padStart(7)} ${'nginx req/s'.padStart(12)} ${'µs/req'.padStart(7)}   portico/nginx   cost over plain: portico, nginx (throughput %, CPU µs/req more)`,
  );
  for (const scenario of SCENARIOS) {
    const r = results.get(scenario.name)!;
    const p = r.get(portico.name)!;
    const n = r.get(nginx.name)!;
    const cost = (x: LoadResult, base: LoadResult): string =>
      `${fmt((x.requestsPerSecond / base.requestsPerSecond) * 100)} %, ${(x.cpuUsPerRequest ?? Number.NaN) >= (base.cpuUsPerRequest ?? Number.NaN) ? '+' : ''}${fmt((x.cpuUsPerRequest ?? Number.NaN) - (base.cpuUsPerRequest ?? Number.NaN))}`;
    const errors = p.errors + n.errors === 0 ? '' : `   errors ${p.errors} / ${n.errors}`;
    console.log(
      `  ${scenario.name.padEnd(20)} ${fmt(p.requestsPerSecond, 0).padStart(13)} ${fmt(p.cpuUsPerRequest ?? Number.NaN).padStart(7)} ${fmt(n.requestsPerSecond, 0).padStart(12)} ${fmt(n.cpuUsPerRequest ?? Number.NaN).padStart(7)}   ${fmt((p.requestsPerSecond / n.requestsPerSecond) * 100).padStart(11)} %   ${scenario.name === 'plain' ? '' : `${cost(p, plain.get(portico.name)!)}; ${cost(n, plain.get(nginx.name)!)}`}${errors}`,
    );
  }
}

async function main(): Promise<void> {
  const peers = ensurePeers([NGINX, WRK], installFlag(flags.install));
  if (!peers.has('nginx') || !peers.has('wrk')) {
    console.log('nginx or wrk not installed: the route-feature bench is skipped');
    return;
  }
  console.log(
    `\nroute features (CORS, retries, mirrors): load average at start ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}; wrk, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${SECONDS} s`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-features-'));
  try {
    const backend = (status = '200') =>
      startChild(
        process.execPath,
        ['--import', 'tsx', join(here, 'backend.ts'), status],
        /listening on [\d.]+:(\d+)/,
      );
    const backends: Backends = {
      ok: (await backend()).port,
      failing: (await backend('503')).port,
      mirror: (await backend()).port,
    };
    const configFile = join(dir, 'fleet.json');
    writeFileSync(configFile, JSON.stringify(porticoConfig(backends)));
    const proxyPort = await freePort();
    const proxy = await startChild(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        STATIC_PROXY,
        configFile,
        join(here, '../dist/proxy/index.js'),
        '1',
        String(proxyPort),
      ],
      /listening: port-80 on [\d.]+:(\d+)/,
    );
    const metrics = /listening: metrics on [\d.]+:(\d+)/;
    for (let i = 0; i < 100 && !metrics.test(proxy.output()); i++)
      await new Promise((r) => setTimeout(r, 50));
    const portico: Target = {
      name: 'portico (1 worker)',
      port: proxyPort,
      pids: () => processTree(proxy.pid),
      metricsPort: Number(metrics.exec(proxy.output())?.[1]),
    };
    const nginxPort = await freePort();
    const { pid } = await startNginx(dir, 'nginx-features', 1, nginxHttp(backends, nginxPort), [nginxPort]);
    const nginx: Target = { name: 'nginx (1 worker)', port: nginxPort, pids: () => processTree(pid) };
    const results = new Map<string, Map<string, LoadResult>>();
    for (const scenario of SCENARIOS) {
      for (const target of [portico, nginx]) for (let i = 0; i < 4; i++) await check(target, scenario);
      const before = await counterSum(portico.metricsPort!, 'portico_upstream_retries_total');
      results.set(scenario.name, await measure(scenario, [portico, nginx]));
      if (scenario.name === 'retry, half failing') {
        const retried = (await counterSum(portico.metricsPort!, 'portico_upstream_retries_total')) - before;
        const sent = results.get(scenario.name)!.get(portico.name)!.requestsPerSecond * SECONDS * ROUNDS;
        console.log(
          `  portico retried ${fmt((retried / sent) * 1000, 0)} per 1,000 requests of that scenario (about 500 expected: one endpoint in two fails)`,
        );
      }
    }
    const mirrors = ['answered', 'failed', 'skipped'].map(
      (outcome) =>
        [
          outcome,
          counterSum(portico.metricsPort!, 'portico_upstream_mirrors_total', `outcome="${outcome}"`),
        ] as const,
    );
    const counts = await Promise.all(mirrors.map(async ([outcome, n]) => `${outcome} ${await n}`));
    print(results, portico, nginx);
    console.log(`  portico's mirror copies: ${counts.join(', ')}`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

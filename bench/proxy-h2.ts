// HTTP/2 half of `npm run bench:proxy`: Portico against nginx, each with one and with two workers, in front of
// the same backends, driven by the same h2load (Debian's nghttp2-client) in the same run:
//   - h2 over TLS, many connections and streams each, to an HTTP/1.1 backend (browsers to a web service);
//   - unary gRPC calls over h2c, to an h2c backend (service to service).
// Rounds interleave the targets and the median round is printed, with p50/p99 from h2load's per-request log,
// CPU per request over every process of a target, and the ratio to nginx with as many workers.
// Each round sends a fixed number of requests (not a duration): h2load cuts the streams in flight when a duration
// ends, and the resets those cancellations cause upstream trip the h2c backend's own reset limit (nghttp2's), which
// then fails whichever target comes next.
// Options: --requests N (per round, default 40000), --rounds N (default 3), --baseline DIR (also one worker of
// another build: a change's before and after), --install on|off (apt-get h2load and nginx when missing; default
// on, see peers.ts).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectH2, constants } from 'node:http2';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateCertificates } from '../src/certificates/certs.js';
import { FLEET_CONFIG_SCHEMA_VERSION, type FleetConfig, type Route } from '../src/ir/fleet-config.js';
import { type LoadResult, percentile } from './load.js';
import { startNginx } from './nginx.js';
import { ensurePeers, H2LOAD, installFlag, NGINX } from './peers.js';
import { children, cpuMicrosOf, freePort, processTree, startChild } from './processes.js';
import { configForBuild } from './proxy-fleet.js';

const { values: flags } = parseArgs({
  options: {
    requests: { type: 'string', default: '40000' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    install: { type: 'string' },
  },
});
const REQUESTS = Number(flags.requests);
const ROUNDS = Number(flags.rounds);
const here = fileURLToPath(new URL('.', import.meta.url));

/** A gRPC request body: one length-prefixed message of 32 bytes (uncompressed). */
const GRPC_MESSAGE = Buffer.concat([Buffer.from([0, 0, 0, 0, 32]), randomBytes(32)]);
const GRPC_PATH = '/bench.Echo/Unary';

interface Scenario {
  name: string;
  /** h2load's arguments before the URL. */
  args: (bodyFile: string) => string[];
  url: (target: Target) => string;
}

interface Target {
  name: string;
  workers: number;
  tlsPort: number;
  h2cPort: number;
  pids: () => number[];
}

const SCENARIOS: Scenario[] = [
  {
    name: 'h2 over TLS, 20 connections x 10 streams, to an HTTP/1.1 backend',
    args: () => ['-c', '20', '-m', '10'],
    url: (t) => `https://127.0.0.1:${t.tlsPort}/`,
  },
  {
    name: 'unary gRPC over h2c, 10 connections x 20 streams, to an h2c backend',
    args: (bodyFile) => [
      '-c',
      '10',
      '-m',
      '20',
      '-d',
      bodyFile,
      '-H',
      'content-type: application/grpc',
      '-H',
      'te: trailers',
    ],
    url: (t) => `http://127.0.0.1:${t.h2cPort}${GRPC_PATH}`,
  },
];

function fleetConfig(h1Port: number, h2cPort: number, cert: { cert: string; key: string }): FleetConfig {
  const route = (name: string, prefix: string, cluster: string): Route => ({
    name: `bench/${name}/rule/0/match/0`,
    routeRef: { namespace: 'bench', name, rule: 0 },
    match: { path: { type: 'PathPrefix', value: prefix }, headers: [], queryParams: [] },
    filters: [],
    action: { type: 'Forward', backends: [{ weight: 1, cluster, filters: [] }], timeoutMs: 15000 },
  });
  const cluster = (name: string, protocol: 'http' | 'h2c') => ({
    name: `bench/${name}:80`,
    service: { namespace: 'bench', name, port: 80 },
    protocol,
  });
  return {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet: 'bench/eg',
    gateways: [{ name: 'bench/eg', generation: 1 }],
    listeners: [
      { name: 'port-80', port: 80, protocol: 'HTTP', gatewayListeners: [] },
      {
        name: 'port-81',
        port: 81,
        protocol: 'HTTPS',
        gatewayListeners: [],
        tls: { certificates: [{ hostnames: ['*'], secrets: ['bench/cert'] }] },
      },
    ],
    virtualHosts: [
      {
        name: 'port-80/*',
        listener: 'port-80',
        hostname: '*',
        routes: [route('grpc', '/bench.Echo', 'bench/grpc:80')],
      },
      { name: 'port-81/*', listener: 'port-81', hostname: '*', routes: [route('web', '/', 'bench/web:80')] },
    ],
    clusters: [cluster('grpc', 'h2c'), cluster('web', 'http')],
    endpoints: [
      { name: 'bench/grpc:80', endpoints: [{ address: '127.0.0.1', port: h2cPort }] },
      { name: 'bench/web:80', endpoints: [{ address: '127.0.0.1', port: h1Port }] },
    ],
    secrets: [{ name: 'bench/cert', certificatePem: cert.cert, privateKeyPem: cert.key }],
    policies: [],
  };
}

/** Portico from the build, its HTTP listener (port 80) at `base` and its HTTPS one (port 81) at base + 1. */
const STATIC_PROXY = `
const [configFile, entry, workers, base] = process.argv.slice(1);
const { runStaticProxy } = await import(entry);
// Its lines on stderr, as \`portico proxy\` writes them: the ports are read from them.
const { createLogger, logToStderr } = await import(new URL('../platform/log-line.js', 'file://' + entry).href);
process.exitCode = await runStaticProxy(configFile, {
  bindAddress: '127.0.0.1', portOffset: Number(base) - 80, drainMs: 0, workers: Number(workers),
  log: createLogger('info', logToStderr),
});
`;

/** Portico from the build at `build` (default: this checkout's), named for it when it is a baseline. */
async function startPortico(configFile: string, workers: number, build = join(here, '..')): Promise<Target> {
  const base = await freePort();
  const entry = join(build, 'dist/proxy/index.js');
  const child = await startChild(
    process.execPath,
    ['--input-type=module', '-e', STATIC_PROXY, configFile, entry, String(workers), String(base)],
    /listening: port-81 on [\d.]+:(\d+)/,
  );
  const of = build === join(here, '..') ? '' : ', --baseline build';
  const name = `portico (${workers} worker${workers === 1 ? '' : 's'}${of})`;
  return { name, workers, tlsPort: child.port, h2cPort: base, pids: () => processTree(child.pid) };
}

async function startNginxH2(
  dir: string,
  workers: number,
  backends: { h1: number; h2c: number },
  cert: { certFile: string; keyFile: string },
): Promise<Target> {
  const [tlsPort, h2cPort] = [await freePort(), await freePort()];
  const http = `  # nginx ends a connection (GOAWAY) after 1,000 requests by default; Portico does not: neither should here.
  keepalive_requests 1000000;
  upstream web { server 127.0.0.1:${backends.h1}; keepalive 128; keepalive_requests 1000000; }
  upstream grpc { server 127.0.0.1:${backends.h2c}; keepalive 128; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:${tlsPort} ssl http2;
    ssl_certificate ${cert.certFile};
    ssl_certificate_key ${cert.keyFile};
    location / { proxy_pass http://web; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
  server {
    listen 127.0.0.1:${h2cPort} http2;
    location / { grpc_pass grpc://grpc; }
  }`;
  const { pid } = await startNginx(dir, `nginx-h2-${workers}`, workers, http, [tlsPort, h2cPort]);
  const name = `nginx (${workers} worker${workers === 1 ? '' : 's'})`;
  return { name, workers, tlsPort, h2cPort, pids: () => processTree(pid) };
}

/** One request through the target, checked the way its scenario's clients would check it. */
async function check(target: Target, scenario: Scenario): Promise<void> {
  const url = new URL(scenario.url(target));
  const grpc = url.pathname === GRPC_PATH;
  const session = connectH2(url.origin, { rejectUnauthorized: false });
  try {
    const result = await new Promise<string>((resolve, reject) => {
      const headers = grpc
        ? { ':method': 'POST', ':path': url.pathname, 'content-type': 'application/grpc', te: 'trailers' }
        : { ':path': url.pathname };
      const stream = session.request(headers);
      let status = 0;
      stream.on('response', (h) => {
        status = Number(h[constants.HTTP2_HEADER_STATUS]);
      });
      stream.on('trailers', (t) => resolve(`${status} grpc-status ${String(t['grpc-status'])}`));
      stream.on('end', () => resolve(`${status}`));
      stream.on('error', reject);
      stream.resume();
      stream.end(grpc ? GRPC_MESSAGE : undefined);
    });
    const expected = grpc ? '200 grpc-status 0' : '200';
    if (result !== expected)
      throw new Error(`${target.name}: ${scenario.name}: got ${result}, not ${expected}`);
  } finally {
    session.close();
  }
}

async function h2load(args: string[], logFile: string): Promise<LoadResult> {
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      'h2load',
      ['-t', '1', '-n', String(REQUESTS), '--log-file', logFile, ...args],
      { maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => (error === null ? resolve(stdout) : reject(error)),
    );
  });
  const rate = /finished in [\d.]+\w*, ([\d.]+) req\/s/.exec(out);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  const counts =
    /requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed, (\d+) errored/.exec(out);
  if (rate === null || codes === null || counts === null) throw new Error(`h2load said:\n${out}`);
  const latencies = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => Number(l.split('\t')[2]) / 1000)
    .sort((a, b) => a - b);
  const notOk = Number(codes[2]) + Number(codes[3]) + Number(codes[4]);
  return {
    requestsPerSecond: Number(rate[1]),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors: notOk + Number(counts[1]) + Number(counts[2]),
  };
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

async function measure(scenario: Scenario, targets: Target[], dir: string, bodyFile: string): Promise<void> {
  const runs = new Map<string, LoadResult[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of targets) {
      const pids = target.pids();
      const before = cpuMicrosOf(pids);
      const result = await h2load(
        [...scenario.args(bodyFile), scenario.url(target)],
        join(dir, 'h2load.log'),
      );
      const after = cpuMicrosOf(pids);
      const requests = REQUESTS;
      if (before !== undefined && after !== undefined) result.cpuUsPerRequest = (after - before) / requests;
      runs.set(target.name, [...(runs.get(target.name) ?? []), result]);
    }
  }
  console.log(`\n${scenario.name} (median of ${ROUNDS} rounds of ${REQUESTS} requests):`);
  const medians = new Map<string, LoadResult>();
  for (const target of targets) {
    const all = runs.get(target.name)!.sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
    const r = all[Math.floor(all.length / 2)]!;
    medians.set(target.name, r);
    const cpu = `cpu ${fmt(r.cpuUsPerRequest ?? Number.NaN, 1).padStart(6)} us/req`;
    console.log(
      `  ${target.name.padEnd(20)} ${fmt(r.requestsPerSecond, 0).padStart(8)} req/s   p50 ${fmt(r.p50Ms).padStart(6)} ms   p99 ${fmt(r.p99Ms).padStart(6)} ms   ${cpu}   errors ${all.reduce((s, x) => s + x.errors, 0)}`,
    );
  }
  for (const workers of [1, 2]) {
    const p = targets.find((t) => t.name.startsWith('portico') && t.workers === workers);
    const n = targets.find((t) => t.name.startsWith('nginx') && t.workers === workers);
    if (p === undefined || n === undefined) continue;
    const ratio = medians.get(p.name)!.requestsPerSecond / medians.get(n.name)!.requestsPerSecond;
    console.log(`  ${p.name} / ${n.name}: ${fmt(ratio)} of nginx's throughput (target >= 0.60)`);
  }
  const baseline = targets.find((t) => t.name.includes('--baseline'));
  if (baseline === undefined) return;
  const ratio =
    medians.get(targets[0]!.name)!.requestsPerSecond / medians.get(baseline.name)!.requestsPerSecond;
  console.log(`  ${targets[0]!.name} / ${baseline.name}: ${fmt(ratio)} (1.00 is no change)`);
}

async function main(): Promise<void> {
  const peers = ensurePeers([H2LOAD, NGINX], installFlag(flags.install));
  if (!peers.has('h2load')) {
    console.log('h2load not installed (apt-get install nghttp2-client): the HTTP/2 bench is skipped');
    return;
  }
  console.log(
    `\nHTTP/2 and gRPC: load average at start ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-h2-'));
  try {
    const tsx = ['--import', 'tsx'];
    const h1 = await startChild(
      process.execPath,
      [...tsx, join(here, 'backend.ts')],
      /listening on [\d.]+:(\d+)/,
    );
    const h2c = await startChild(
      process.execPath,
      [...tsx, join(here, 'backend-h2.ts')],
      /listening on [\d.]+:(\d+)/,
    );
    const generated = generateCertificates({ extraSans: ['bench.test'] });
    const cert = { cert: generated.serverCertPem, key: generated.serverKeyPem };
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    writeFileSync(certFile, cert.cert);
    writeFileSync(keyFile, cert.key, { mode: 0o600 });
    const configFile = join(dir, 'fleet.json');
    writeFileSync(configFile, JSON.stringify(fleetConfig(h1.port, h2c.port, cert)));
    const bodyFile = join(dir, 'grpc-body');
    writeFileSync(bodyFile, GRPC_MESSAGE);
    const targets = [await startPortico(configFile, 1), await startPortico(configFile, 2)];
    if (flags.baseline !== undefined) {
      const baselineFile = join(dir, 'fleet-baseline.json');
      const config = fleetConfig(h1.port, h2c.port, cert);
      writeFileSync(baselineFile, JSON.stringify(await configForBuild(flags.baseline, config)));
      targets.push(await startPortico(baselineFile, 1, flags.baseline));
    }
    if (peers.has('nginx')) {
      const backends = { h1: h1.port, h2c: h2c.port };
      targets.push(await startNginxH2(dir, 1, backends, { certFile, keyFile }));
      targets.push(await startNginxH2(dir, 2, backends, { certFile, keyFile }));
    } else console.log('nginx not installed: measuring Portico only');
    for (const scenario of SCENARIOS) {
      for (const target of targets) await check(target, scenario);
      await measure(scenario, targets, dir, bodyFile);
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

// The layer-4 half of `npm run bench:proxy`: Portico's TCP listener and its TLS passthrough against nginx's
// `stream` module (TLS read with `ssl_preread`, as Portico reads the ClientHello for its SNI; half-close relayed by
// both), same workers, same backend, same load generator, same run. The backend is nginx itself answering 200
// over HTTP and HTTPS (one worker), so the relays are what is measured, not a Node backend; wrk drives HTTP/1.1
// through the relays:
// kept-alive connections (bytes relayed), a new connection per request (accept, connect, teardown), and HTTPS
// through the passthrough (TLS records relayed, the ClientHello read once per connection); with one worker, a bare
// Node relay (bench/tcp-relay.ts) too, the floor of any relay on Node's sockets. Prints throughput,
// p50/p99, CPU per request over each target's processes, and Portico's share of nginx's throughput (target ≥ 0.8).
// Options:
//   --rounds N          rounds per case, targets in rotating order (default 5), 2 s each
//   --workers LIST      worker counts, each run for both (default 1,2)
//   --install on|off    apt-get the peers that are missing: nginx, its stream module, wrk (default on)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateCertificates } from '../src/certificates/certs.js';
import { FLEET_CONFIG_SCHEMA_VERSION, type FleetConfig, type Listener } from '../src/ir/fleet-config.js';
import { closedLoopWrk, type LoadResult, median } from './load.js';
import { startNginx } from './nginx.js';
import { ensurePeers, installFlag, NGINX, NGINX_STREAM, WRK } from './peers.js';
import { children, cpuMicrosOf, freePort, processTree, startChild } from './processes.js';

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    workers: { type: 'string', default: '1,2' },
    install: { type: 'string' },
  },
});
const ROUNDS = Number(flags.rounds);
const WORKER_COUNTS = flags.workers.split(',').map(Number);
const SECONDS = 2;
const CONNECTIONS = 50;
const here = fileURLToPath(new URL('.', import.meta.url));

/** One relay under test: its TCP and TLS ports and the processes whose CPU time is its cost. */
interface Target {
  name: string;
  tcpPort: number;
  tlsPort: number;
  pids: () => number[];
  /** Its root process (Portico's primary, nginx's master), stopped once its worker count is measured. */
  pid: number | undefined;
}

/** What is measured: a name, the port of a target it uses, and how wrk loads it. */
interface Case {
  name: string;
  port: (t: Target) => number;
  scheme: 'http' | 'https';
  headers: Record<string, string>;
}

const CASES: Case[] = [
  { name: 'TCP, kept-alive', port: (t) => t.tcpPort, scheme: 'http', headers: {} },
  {
    name: 'TCP, new connection per request',
    port: (t) => t.tcpPort,
    scheme: 'http',
    headers: { connection: 'close' },
  },
  { name: 'TLS passthrough, kept-alive', port: (t) => t.tlsPort, scheme: 'https', headers: {} },
];

/** Port 80: TCP to the backend's HTTP port; port 81: TLS passed through (any SNI) to its HTTPS port. */
function layer4Fleet(httpPort: number, httpsPort: number): FleetConfig {
  const listener = (port: number, protocol: Listener['protocol']): Listener => ({
    name: `port-${port}`,
    port,
    protocol,
    gatewayListeners: [],
    ...(protocol === 'TLS'
      ? { tls: { certificates: [{ hostnames: ['*'], secrets: [], passthrough: true }] } }
      : {}),
  });
  const backend = (name: string, port: number, listenerPort: number) => ({
    cluster: { name, service: { namespace: 'bench', name, port }, protocol: 'tcp' as const },
    endpoints: { name, endpoints: [{ address: '127.0.0.1', port }] },
    vhost: {
      name: `port-${listenerPort}/*`,
      listener: `port-${listenerPort}`,
      hostname: '*',
      routes: [
        {
          name: `bench/${name}/rule/0/match/0`,
          routeRef: { namespace: 'bench', name, rule: 0 },
          match: { headers: [], queryParams: [] },
          filters: [],
          action: {
            type: 'Forward' as const,
            backends: [{ cluster: name, weight: 1, filters: [] }],
            timeoutMs: 0,
          },
        },
      ],
    },
  });
  const plain = backend('plain', httpPort, 80);
  const secure = backend('secure', httpsPort, 81);
  return {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet: 'bench/eg',
    gateways: [{ name: 'bench/eg', generation: 1 }],
    listeners: [listener(80, 'TCP'), listener(81, 'TLS')],
    virtualHosts: [plain.vhost, secure.vhost],
    clusters: [plain.cluster, secure.cluster],
    endpoints: [plain.endpoints, secure.endpoints],
    secrets: [],
    policies: [],
  };
}

/** Portico from the build, its TCP listener (port 80) at `base` and its TLS one (port 81) at base + 1. */
const STATIC_PROXY = `
const [configFile, entry, workers, base] = process.argv.slice(1);
const { runStaticProxy } = await import(entry);
const { createLogger, logToStderr } = await import(new URL('../platform/log-line.js', 'file://' + entry).href);
process.exitCode = await runStaticProxy(configFile, {
  bindAddress: '127.0.0.1', portOffset: Number(base) - 80, drainMs: 0, workers: Number(workers),
  log: createLogger('info', logToStderr),
});
`;

/** Whether nothing listens on `port` of loopback now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port }, () => server.close(() => resolve(true)));
  });
}

/** A free port whose next one is free too: Portico's listeners take ports 80 and 81 at one offset. */
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port < 65_535 && (await portFree(port + 1))) return port;
  }
}

async function startPortico(configFile: string, workers: number): Promise<Target> {
  const base = await freePortPair();
  const entry = join(here, '../dist/proxy/index.js');
  const child = await startChild(
    process.execPath,
    ['--input-type=module', '-e', STATIC_PROXY, configFile, entry, String(workers), String(base)],
    /listening: port-81 on [\d.]+:(\d+)/,
  );
  const name = `portico (${workers} worker${workers === 1 ? '' : 's'})`;
  return { name, tcpPort: base, tlsPort: child.port, pids: () => processTree(child.pid), pid: child.pid };
}

async function startNginxStream(dir: string, workers: number, backend: Backend): Promise<Target> {
  const [tcpPort, tlsPort] = [await freePort(), await freePort()];
  // Half-close relayed as Portico relays it (a FIN from one side ends only that direction): nginx's default
  // closes both at the first FIN, a shortcut Portico does not take.
  const stream = `  proxy_half_close on;
  server { listen 127.0.0.1:${tcpPort}; proxy_pass 127.0.0.1:${backend.httpPort}; }
  server { listen 127.0.0.1:${tlsPort}; ssl_preread on; proxy_pass 127.0.0.1:${backend.httpsPort}; }`;
  const { pid } = await startNginx(dir, `nginx-stream-${workers}`, workers, '', [tcpPort, tlsPort], {
    stream,
  });
  const name = `nginx stream (${workers} worker${workers === 1 ? '' : 's'})`;
  return { name, tcpPort, tlsPort, pids: () => processTree(pid), pid };
}

/**
 * The floor for a relay in Node (bench/tcp-relay.ts, one process per port: it reads no SNI): what Node's own
 * sockets cost, parsing nothing, measured beside Portico's one worker.
 */
async function startNodeRelays(backend: Backend): Promise<Target> {
  const relay = (port: number) =>
    startChild(
      process.execPath,
      ['--import', 'tsx', join(here, 'tcp-relay.ts'), String(port)],
      /listening on [\d.]+:(\d+)/,
    );
  const [tcp, tls] = [await relay(backend.httpPort), await relay(backend.httpsPort)];
  return {
    name: 'node relay (floor)',
    tcpPort: tcp.port,
    tlsPort: tls.port,
    pids: () => [...processTree(tcp.pid), ...processTree(tls.pid)],
    pid: undefined,
  };
}

interface Backend {
  httpPort: number;
  httpsPort: number;
}

/** nginx answering 200 `ok` over HTTP and HTTPS, one worker: the same backend behind every relay. */
async function startBackend(dir: string): Promise<Backend> {
  const generated = generateCertificates({ extraSans: ['bench.test'] });
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  writeFileSync(certFile, generated.serverCertPem);
  writeFileSync(keyFile, generated.serverKeyPem);
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const http = `  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:${httpPort};
    listen 127.0.0.1:${httpsPort} ssl;
    ssl_certificate ${certFile};
    ssl_certificate_key ${keyFile};
    location / { return 200 "ok"; }
  }`;
  await startNginx(dir, 'backend', 1, http, [httpPort, httpsPort]);
  return { httpPort, httpsPort };
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

function row(name: string, r: LoadResult): string {
  const cpu = `cpu ${fmt(r.cpuUsPerRequest ?? Number.NaN, 1).padStart(6)} us/req`;
  return `  ${name.padEnd(26)} ${fmt(r.requestsPerSecond, 0).padStart(9)} req/s   p50 ${fmt(r.p50Ms).padStart(7)} ms   p99 ${fmt(r.p99Ms).padStart(7)} ms   ${cpu}   errors ${r.errors}`;
}

/**
 * One case over the targets (Portico, nginx, then any others), rotating which goes first; per target the
 * medians, and Portico's throughput over nginx's paired per round.
 */
async function measureCase(c: Case, targets: Target[]): Promise<void> {
  const [portico, nginx] = targets as [Target, Target];
  const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.name, []]));
  const ratios: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = [...targets.slice(r % targets.length), ...targets.slice(0, r % targets.length)];
    const round = new Map<string, LoadResult>();
    for (const target of order) {
      const before = cpuMicrosOf(target.pids());
      const result = await closedLoopWrk(c.port(target), CONNECTIONS, SECONDS, c.headers, c.scheme);
      const after = cpuMicrosOf(target.pids());
      const requests = result.requestsPerSecond * SECONDS;
      const cpu = before === undefined || after === undefined ? Number.NaN : (after - before) / requests;
      round.set(target.name, { ...result, cpuUsPerRequest: cpu });
      runs.get(target.name)!.push({ ...result, cpuUsPerRequest: cpu });
    }
    ratios.push(round.get(portico.name)!.requestsPerSecond / round.get(nginx.name)!.requestsPerSecond);
  }
  console.log(`${c.name}:`);
  for (const [name, list] of runs) {
    console.log(
      row(name, {
        requestsPerSecond: median(list.map((x) => x.requestsPerSecond)),
        p50Ms: median(list.map((x) => x.p50Ms)),
        p99Ms: median(list.map((x) => x.p99Ms)),
        errors: list.reduce((sum, x) => sum + x.errors, 0),
        cpuUsPerRequest: median(list.map((x) => x.cpuUsPerRequest ?? Number.NaN)),
      }),
    );
  }
  const ratio = median(ratios);
  console.log(
    `  portico / nginx throughput: ${fmt(ratio)} (median of paired rounds; target >= 0.80)${ratio < 0.8 ? '  BELOW TARGET' : ''}`,
  );
}

async function main(): Promise<void> {
  const peers = ensurePeers([NGINX, NGINX_STREAM, WRK], installFlag(flags.install));
  if (![NGINX, NGINX_STREAM, WRK].every((p) => peers.has(p.command))) {
    console.log('layer-4 bench skipped: it needs nginx, its stream module and wrk');
    return;
  }
  const load = (): string =>
    loadavg()
      .map((n) => n.toFixed(2))
      .join(' ');
  console.log(
    `\nlayer 4: ${CONNECTIONS} connections, ${SECONDS} s x ${ROUNDS} rounds per case; load average at start: ${load()}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-l4-'));
  try {
    const backend = await startBackend(dir);
    const configFile = join(dir, 'fleet.json');
    writeFileSync(configFile, JSON.stringify(layer4Fleet(backend.httpPort, backend.httpsPort)));
    for (const workers of WORKER_COUNTS) {
      const portico = await startPortico(configFile, workers);
      const nginx = await startNginxStream(dir, workers, backend);
      console.log(`\n${workers} worker${workers === 1 ? '' : 's'} each:`);
      const targets = [portico, nginx];
      if (workers === 1) targets.push(await startNodeRelays(backend));
      for (const c of CASES) await measureCase(c, targets);
      for (const { pid } of targets) if (pid !== undefined) process.kill(pid, 'SIGTERM');
    }
    console.log(`\nload average at end: ${load()}`);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    rmSync(dir, { force: true, recursive: true });
  }
}

await main();

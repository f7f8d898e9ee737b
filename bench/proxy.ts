// `npm run bench:proxy`: Portico's proxy against nginx (one worker, upstream keep-alive) in front of the
// same node:http backend, same load generator, same run. Prints throughput, p50/p99, and p99 latency added
// over a direct request at a fixed 1,000 requests/s. Bounded: about 50 s.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedLoopNode, closedLoopWrk, fixedRate, type LoadResult } from './load.js';

const ROUNDS = 3;
const THROUGHPUT_SECONDS = 3;
const FIXED_RATE_SECONDS = 2;
const FIXED_RATE = 1000;
const CONNECTIONS = 50;

const here = fileURLToPath(new URL('.', import.meta.url));
const STATIC_PROXY = `
const [configFile, entry] = process.argv.slice(1);
const { runStaticProxy } = await import(entry);
process.exitCode = await runStaticProxy(configFile, { bindAddress: '127.0.0.1', portMap: () => 0, drainMs: 0 });
`;
const children: ChildProcess[] = [];

function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts a child and resolves with the port it reports on stdout/stderr. */
function startChild(command: string, args: string[], pattern: RegExp): Promise<number> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (c: Buffer): void => {
      seen += c.toString();
      const m = pattern.exec(seen);
      if (m !== null) resolve(Number(m[1]));
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${command} exited (${code}): ${seen}`)));
  });
}

function startNginx(backendPort: number, dir: string): Promise<number> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'])
    rmSync(join(dir, d), { force: true, recursive: true });
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream backend { server 127.0.0.1:${backendPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const child = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
    stdio: 'ignore',
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`nginx exited (${code})`)));
    // nginx prints nothing when ready: poll until it answers.
    const poll = async (): Promise<void> => {
      for (let i = 0; i < 50; i++) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/`);
          await res.arrayBuffer();
          resolve(port);
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      reject(new Error('nginx did not start'));
    };
    void poll();
  });
}

function fleetConfig(backendPort: number): unknown {
  return {
    schemaVersion: 1,
    fleet: 'bench/eg',
    gateways: [{ name: 'bench/eg', generation: 1 }],
    listeners: [
      {
        name: 'port-80',
        port: 80,
        protocol: 'HTTP',
        gatewayListeners: [],
        virtualHosts: ['port-80/bench.test'],
      },
    ],
    virtualHosts: [
      {
        name: 'port-80/bench.test',
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
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Runs `measure` on every target, ROUNDS times interleaved; each figure is the median over the rounds. */
async function rounds(
  targets: [string, number][],
  measure: (port: number) => Promise<LoadResult>,
): Promise<Map<string, LoadResult>> {
  const results = new Map<string, LoadResult[]>(targets.map(([name]) => [name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, port] of targets) results.get(name)!.push(await measure(port));
  }
  const out = new Map<string, LoadResult>();
  for (const [name, list] of results) {
    out.set(name, {
      requestsPerSecond: median(list.map((x) => x.requestsPerSecond)),
      p50Ms: median(list.map((x) => x.p50Ms)),
      p99Ms: median(list.map((x) => x.p99Ms)),
      errors: list.reduce((sum, x) => sum + x.errors, 0),
    });
  }
  return out;
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

function row(name: string, r: LoadResult): string {
  return `${name.padEnd(22)} ${fmt(r.requestsPerSecond, 0).padStart(9)} req/s   p50 ${fmt(r.p50Ms).padStart(7)} ms   p99 ${fmt(r.p99Ms).padStart(7)} ms   errors ${r.errors}`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
  try {
    const tsx = ['--import', 'tsx'];
    const backendPort = await startChild(
      process.execPath,
      [...tsx, join(here, 'backend.ts')],
      /listening on [\d.]+:(\d+)/,
    );
    const configFile = join(dir, 'fleet.json');
    writeFileSync(configFile, JSON.stringify(fleetConfig(backendPort)));
    // The proxy runs from the build (dist/), as in production: no TypeScript loader in the measured process.
    const porticoPort = await startChild(
      process.execPath,
      ['--input-type=module', '-e', STATIC_PROXY, configFile, join(here, '../dist/proxy/index.js')],
      /listening: port-80 on [\d.]+:(\d+)/,
    );
    const nginxPort = has('nginx') ? await startNginx(backendPort, dir) : undefined;
    const useWrk = has('wrk');
    const closedLoop = useWrk ? closedLoopWrk : closedLoopNode;
    const targets: [string, number][] = [
      ['backend direct', backendPort],
      ['portico', porticoPort],
      ...(nginxPort === undefined ? [] : ([['nginx (1 worker)', nginxPort]] as [string, number][])),
    ];
    if (nginxPort === undefined) console.log('nginx not installed: measuring Portico only');
    // The machine is shared: rounds interleave the targets and the median round is reported, so a burst of
    // someone else's work does not land on one target only.
    console.log(
      `\nthroughput: ${useWrk ? 'wrk' : 'node closed loop'}, ${CONNECTIONS} keep-alive connections, median of ${ROUNDS} rounds of ${THROUGHPUT_SECONDS} s`,
    );
    const throughput = await rounds(targets, (port) => closedLoop(port, CONNECTIONS, THROUGHPUT_SECONDS));
    for (const [name] of targets) console.log(row(name, throughput.get(name)!));
    const portico = throughput.get('portico')!;
    const nginx = throughput.get('nginx (1 worker)');
    if (nginx !== undefined) {
      const ratio = (portico.requestsPerSecond / nginx.requestsPerSecond) * 100;
      console.log(`portico / nginx throughput: ${fmt(ratio, 1)} % (target >= 60 %)`);
    }

    console.log(
      `\nlatency at a fixed ${FIXED_RATE} req/s (node open loop), median of ${ROUNDS} rounds of ${FIXED_RATE_SECONDS} s`,
    );
    for (const [, port] of targets) await fixedRate(port, FIXED_RATE, 1); // warm-up
    const fixed = await rounds(targets, (port) => fixedRate(port, FIXED_RATE, FIXED_RATE_SECONDS));
    for (const [name] of targets) console.log(row(name, fixed.get(name)!));
    const direct = fixed.get('backend direct')!;
    console.log(
      `portico p99 added latency: ${fmt(fixed.get('portico')!.p99Ms - direct.p99Ms, 3)} ms (target <= 1 ms)`,
    );
    const nginxFixed = fixed.get('nginx (1 worker)');
    if (nginxFixed !== undefined)
      console.log(`nginx p99 added latency:   ${fmt(nginxFixed.p99Ms - direct.p99Ms, 3)} ms`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

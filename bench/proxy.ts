// `npm run bench:proxy`: Portico's proxy against nginx (one worker, upstream keep-alive) in front of the
// same node:http backend, same load generator, same run. Prints throughput, p50/p99, and p99 latency added
// over a direct request at a fixed 1,000 requests/s. Bounded: about 40 s.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedLoopNode, closedLoopWrk, fixedRate, type LoadResult } from './load.js';

const THROUGHPUT_SECONDS = 6;
const FIXED_RATE_SECONDS = 4;
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
    console.log(
      `load generator: ${useWrk ? 'wrk' : 'node closed loop'}, ${CONNECTIONS} keep-alive connections, ${THROUGHPUT_SECONDS} s each`,
    );
    if (nginxPort === undefined) console.log('nginx not installed: measuring Portico only');

    const direct = await closedLoop(backendPort, CONNECTIONS, THROUGHPUT_SECONDS);
    const portico = await closedLoop(porticoPort, CONNECTIONS, THROUGHPUT_SECONDS);
    const nginx =
      nginxPort === undefined ? undefined : await closedLoop(nginxPort, CONNECTIONS, THROUGHPUT_SECONDS);
    console.log('\nthroughput (closed loop)');
    console.log(row('backend direct', direct));
    console.log(row('portico', portico));
    if (nginx !== undefined) {
      console.log(row('nginx (1 worker)', nginx));
      console.log(
        `portico / nginx throughput: ${fmt((portico.requestsPerSecond / nginx.requestsPerSecond) * 100, 1)} % (target >= 60 %)`,
      );
    }

    console.log(
      `\nlatency at a fixed ${FIXED_RATE} req/s, ${FIXED_RATE_SECONDS} s each (node open-loop generator)`,
    );
    const directFixed = await fixedRate(backendPort, FIXED_RATE, FIXED_RATE_SECONDS);
    const porticoFixed = await fixedRate(porticoPort, FIXED_RATE, FIXED_RATE_SECONDS);
    const nginxFixed =
      nginxPort === undefined ? undefined : await fixedRate(nginxPort, FIXED_RATE, FIXED_RATE_SECONDS);
    console.log(row('backend direct', directFixed));
    console.log(row('portico', porticoFixed));
    if (nginxFixed !== undefined) console.log(row('nginx (1 worker)', nginxFixed));
    console.log(
      `portico p99 added latency: ${fmt(porticoFixed.p99Ms - directFixed.p99Ms, 3)} ms (target <= 1 ms)`,
    );
    if (nginxFixed !== undefined)
      console.log(`nginx p99 added latency:   ${fmt(nginxFixed.p99Ms - directFixed.p99Ms, 3)} ms`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

// Propagation latency of `portico standalone`: the time from writing an HTTPRoute file until a request through
// the proxy gets 200, for N routes added one at a time (each in its own new file), then again while other
// routes are rewritten continuously and traffic on unchanged routes counts every non-2xx (target: zero).
// Peer in the same run: a request on an existing route (the floor any propagation figure includes).
// Run: npm run bench:propagation [-- --routes 1000 --churn-routes 200 --churn-interval-ms 20]
// `--trace-events FILE` also prints where the time of an idle edit goes, stage by stage: this process, the
// controller and its proxies all append to FILE (the controller is given the same flag and passes it on).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createEchoServer } from '../src/echo/server.js';
import { appendStageTrace, type StageTrace } from '../src/trace/propagation-trace.js';
import { baseYaml, routeYaml } from './propagation-fixtures.js';
import { stageBreakdown } from './propagation-stages.js';

const { values } = parseArgs({
  options: {
    routes: { type: 'string', default: '1000' },
    'churn-routes': { type: 'string', default: '200' },
    'churn-interval-ms': { type: 'string', default: '20' },
    pool: { type: 'string', default: '127.0.199.0/24' },
    'trace-events': { type: 'string' },
  },
});
const TRACE_FILE = values['trace-events'] === undefined ? undefined : resolve(values['trace-events']);
const traceStage: StageTrace = TRACE_FILE === undefined ? () => {} : appendStageTrace(TRACE_FILE);
const ROUTES = Number(values.routes);
const CHURN_ROUTES = Number(values['churn-routes']);
const CHURN_INTERVAL_MS = Number(values['churn-interval-ms']);
const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

const echo = createEchoServer({ namespace: 'default', ingress: 'eg', service: 'echo', pod: 'echo-0' });
await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
const echoPort = (echo.address() as AddressInfo).port;

const dir = await mkdtemp(join(tmpdir(), 'portico-bench-propagation-'));
const files = join(dir, 'resources');
await mkdir(files);
await writeFile(join(files, 'base.yaml'), baseYaml(echoPort));
for (let i = 0; i < 20; i++) await writeFile(join(files, `steady-${i}.yaml`), routeYaml(`steady-${i}`));

const controller = spawn(
  process.execPath,
  [
    MAIN,
    'standalone',
    '-f',
    files,
    '--state-dir',
    join(dir, 'state'),
    '--admin-address',
    '127.0.0.1:0',
    '--discovery-address',
    '127.0.0.1:0',
    '--address-pool',
    values.pool,
    '--proxy-drain-seconds',
    '0',
    '--stop-proxies-on-exit',
    ...(TRACE_FILE === undefined ? [] : ['--trace-events', TRACE_FILE]),
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let output = '';
controller.stdout.setEncoding('utf8').on('data', (chunk: string) => {
  if (output.length < 100_000) output += chunk;
});
const address = await new Promise<string>((resolve, reject) => {
  const timer = setInterval(() => {
    const match = /programmed at (\S+)/.exec(output);
    if (match !== null) {
      clearInterval(timer);
      resolve(match[1]!);
    }
  }, 20);
  controller.on('exit', () => reject(new Error(`controller exited:\n${output}`)));
});

const agent = new Agent({ keepAlive: true, maxSockets: 8 });
function get(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port: 8080, path: '/', headers: { host }, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}
let polls = 0;
async function until200(host: string): Promise<void> {
  for (;;) {
    try {
      polls++;
      if ((await get(host)) === 200) return;
    } catch {
      // the listener may be (re)binding; try again
    }
  }
}

for (let i = 0; i < 20; i++) await until200(`steady-${i}.example.com`);

const floorMs: number[] = [];
for (let i = 0; i < 500; i++) {
  const start = performance.now();
  await get(`steady-${i % 20}.example.com`);
  floorMs.push(performance.now() - start);
}

async function addRoutes(prefix: string, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${i}`;
    traceStage('bench-write', name);
    const start = performance.now();
    await writeFile(join(files, `${name}.yaml`), routeYaml(name));
    await until200(`${name}.example.com`);
    times.push(performance.now() - start);
    traceStage('bench-200', name);
  }
  return times;
}

const pollsBefore = polls;
const added = await addRoutes('route', ROUTES);
const idlePolls = polls - pollsBefore;
traceStage('bench-idle-done');

// Churn: steady routes rewritten back to back; traffic on the unchanged added routes counts non-2xx.
let churning = true;
let churnWrites = 0;
const churn = (async () => {
  let version = 0;
  while (churning) {
    version++;
    const i = version % 20;
    await writeFile(join(files, `steady-${i}.yaml`), routeYaml(`steady-${i}`, version));
    churnWrites++;
    await new Promise((r) => setTimeout(r, CHURN_INTERVAL_MS));
  }
})();
let trafficOk = 0;
const trafficFailures = new Map<string, number>();
const traffic = (async () => {
  let i = 0;
  while (churning) {
    const host = `route-${i++ % Math.max(1, ROUTES)}.example.com`;
    try {
      const status = await get(host);
      if (status >= 200 && status < 300) trafficOk++;
      else trafficFailures.set(String(status), (trafficFailures.get(String(status)) ?? 0) + 1);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      trafficFailures.set(code, (trafficFailures.get(code) ?? 0) + 1);
    }
  }
})();
const addedUnderChurn = await addRoutes('churned', CHURN_ROUTES);
churning = false;
await Promise.all([churn, traffic]);

controller.kill('SIGTERM');
await new Promise((resolve) => controller.on('exit', resolve));
agent.destroy();
echo.close();
await rm(dir, { recursive: true, force: true });

function summary(name: string, values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const f = (v: number) => v.toFixed(2).padStart(7);
  return `${name.padEnd(44)} n ${String(values.length).padStart(5)}  mean ${f(mean)} ms  p50 ${f(q(0.5))} ms  p99 ${f(q(0.99))} ms  max ${f(sorted.at(-1) ?? Number.NaN)} ms`;
}
console.log('propagation: write an HTTPRoute file (one new file per route) → first 200 through the proxy');
console.log(
  `${ROUTES} routes added idle, then ${CHURN_ROUTES} more while 20 routes are rewritten every ${CHURN_INTERVAL_MS} ms`,
);
console.log(summary('request on an existing route (floor)', floorMs));
console.log(summary('route added, idle', added));
console.log(summary('route added, while routes change', addedUnderChurn));
console.log(`polls per added route (idle): ${(idlePolls / Math.max(1, ROUTES)).toFixed(1)}`);
if (TRACE_FILE !== undefined) console.log(await stageBreakdown(TRACE_FILE));
const failures = [...trafficFailures].map(([k, n]) => `${k}×${n}`).join(', ') || 'none';
console.log(
  `while changing: ${churnWrites} route rewrites, ${trafficOk} requests on unchanged routes, non-2xx: ${failures}`,
);

// `npm run bench:proxy`: Portico's proxy against nginx (one worker, upstream keep-alive) and a byte relay
// (the floor: one more Node process hop, no HTTP) in front of the same node:http backend, same load
// generator, same run. Prints throughput, p50/p99, and the latency each adds over a direct request at a
// fixed 1,000 requests/s, with the CPU steal seen meanwhile. Bounded: about 5 min with the defaults.
// Options:
//   --latency-seconds N  measured seconds per target at 1,000 req/s (default 40), in interleaved 2 s slices
//   --pin one|client|split|off  CPU placement in the latency phase (default one; see cpu-placement.ts)
//   --awake on|off       keep vCPUs from halting in the latency phase (default on; see keepCpusAwake)
//   --only throughput|latency  one phase alone
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuTimes, keepCpusAwake, parsePinMode, pin, placement, stealPercent } from './cpu-placement.js';
import { closedLoopNode, closedLoopWrk, type LoadResult, percentile, summarize } from './load.js';
import { fixedRateRaw, type OpenLoopResult } from './open-loop.js';

const ROUNDS = 5;
const THROUGHPUT_SECONDS = 2;
const { values: flags } = parseArgs({
  options: {
    'latency-seconds': { type: 'string', default: '40' },
    // Either phase alone, for iterating on one figure: throughput | latency.
    only: { type: 'string' },
    // Where the latency phase runs its processes: one | client | split | off (see cpu-placement.ts).
    pin: { type: 'string', default: 'one' },
    awake: { type: 'string', default: 'on' },
  },
});
if (flags.awake !== 'on' && flags.awake !== 'off') {
  throw new Error(`--awake: expected on or off, got ${JSON.stringify(flags.awake)}`);
}
const FIXED_RATE_SECONDS = Number(flags['latency-seconds']);
/**
 * The latency phase measures in short slices, the targets taking turns, and pools each target's samples: a
 * stall on this shared VM (steal, another process) then lands on every target alike, which a few long rounds
 * do not assure, and the p99 is over all samples rather than a median of a few rounds' p99s.
 */
const FIXED_RATE_SLICE_SECONDS = 2;
/** /proc/stat counts in 10 ms ticks: one stolen tick in a 2.5 s slice on 2 CPUs is 0.2 %. */
const STEAL_FREE_PERCENT = 0.2;
const PIN_MODE = parsePinMode(flags.pin);
const FIXED_RATE = 1000;
/** Each fixed-rate round first fills the client's connection pool at the same rate (counted in CPU time). */
const FIXED_RATE_WARMUP_SECONDS = 0.5;
const CONNECTIONS = 50;
const WARMUP_SECONDS = 2;

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

/** What is measured: a name, its port, and the process whose CPU time it costs (when known). */
interface Target {
  name: string;
  /** What it is, for CPU placement: the backend itself, or something in front of it. */
  role: 'backend' | 'proxy';
  port: number;
  /** The process serving the port; a function when it is found only once it runs (nginx's worker). */
  pid: () => number | undefined;
}

const CLOCK_TICKS = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of a process in microseconds (Linux /proc), or undefined elsewhere. */
function cpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** The first child process of `parent` (nginx's single worker), found through /proc. */
function childOf(parent: number | undefined): number | undefined {
  if (parent === undefined) return undefined;
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) return Number(entry);
    }
  } catch {
    // Not Linux, or the process list changed under us: no CPU figure.
  }
  return undefined;
}

/** Starts a child and resolves with the port it reports on stdout/stderr, and its pid. */
function startChild(
  command: string,
  args: string[],
  pattern: RegExp,
): Promise<{ port: number; pid: number | undefined }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (c: Buffer): void => {
      seen += c.toString();
      const m = pattern.exec(seen);
      if (m !== null) resolve({ port: Number(m[1]), pid: child.pid });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${command} exited (${code}): ${seen}`)));
  });
}

/** A port free on loopback right now (the OS picks it), for nginx, which cannot report one it chose. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function startNginx(
  backendPort: number,
  dir: string,
): Promise<{ port: number; pid: number | undefined }> {
  const port = await freePort();
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
  const nginxArgs = ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')];
  const child = spawn('nginx', nginxArgs, { stdio: 'ignore' });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      let log = '';
      try {
        log = readFileSync(join(dir, 'error.log'), 'utf8');
      } catch {
        // No log written.
      }
      reject(new Error(`nginx exited (${code}): ${log}`));
    });
    // nginx prints nothing when ready: poll until it answers.
    const poll = async (): Promise<void> => {
      for (let i = 0; i < 50; i++) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/`);
          await res.arrayBuffer();
          resolve({ port, pid: child.pid });
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

interface RoundResults<R extends LoadResult = LoadResult> {
  /** Per target: the median over the rounds. */
  medians: Map<string, LoadResult>;
  /** Per target: each round's result, in round order. */
  perRound: Map<string, R[]>;
}

/**
 * Median over rounds of a per-round comparison: the two targets of one round ran back to back, so a burst of
 * someone else's work on this shared machine hits both, which a ratio of separate medians does not assure.
 */
function pairedMedian(
  results: RoundResults,
  a: string,
  b: string,
  compare: (x: LoadResult, y: LoadResult) => number,
): number {
  const xs = results.perRound.get(a)!;
  const ys = results.perRound.get(b)!;
  return median(xs.map((x, i) => compare(x, ys[i]!)));
}

/**
 * Runs `measure` (for `seconds`) on every target, `count` times interleaved (the order rotating each round),
 * and charges each round the serving process's CPU time per request: unlike req/s, that hardly depends on
 * how much of the shared machine the process got.
 */
async function rounds<R extends LoadResult>(
  targets: Target[],
  seconds: number,
  measure: (port: number) => Promise<R>,
  count = ROUNDS,
): Promise<RoundResults<R>> {
  const results = new Map<string, R[]>(targets.map(({ name }) => [name, []]));
  for (let r = 0; r < count; r++) {
    // Rotating the order keeps any target from always running first (or last) in a round.
    const order = [...targets.slice(r % targets.length), ...targets.slice(0, r % targets.length)];
    for (const target of order) {
      const pid = target.pid();
      const before = cpuMicros(pid);
      const result = await measure(target.port);
      const after = cpuMicros(pid);
      const requests = result.requestsPerSecond * seconds;
      const cpu = before === undefined || after === undefined ? Number.NaN : (after - before) / requests;
      results.get(target.name)!.push({ ...result, cpuUsPerRequest: cpu });
    }
  }
  const out = new Map<string, LoadResult>();
  for (const [name, list] of results) {
    out.set(name, {
      requestsPerSecond: median(list.map((x) => x.requestsPerSecond)),
      p50Ms: median(list.map((x) => x.p50Ms)),
      p99Ms: median(list.map((x) => x.p99Ms)),
      errors: list.reduce((sum, x) => sum + x.errors, 0),
      cpuUsPerRequest: median(list.map((x) => x.cpuUsPerRequest ?? Number.NaN)),
    });
  }
  return { medians: out, perRound: results };
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

function row(name: string, r: LoadResult): string {
  const cpu = `cpu ${fmt(r.cpuUsPerRequest ?? Number.NaN, 1).padStart(6)} us/req`;
  return `${name.padEnd(22)} ${fmt(r.requestsPerSecond, 0).padStart(9)} req/s   p50 ${fmt(r.p50Ms).padStart(7)} ms   p99 ${fmt(r.p99Ms).padStart(7)} ms   ${cpu}   errors ${r.errors}`;
}

const load = (): string =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

async function main(): Promise<void> {
  console.log(`load average at start: ${load()}`);
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
  try {
    const tsx = ['--import', 'tsx'];
    const backend = await startChild(
      process.execPath,
      [...tsx, join(here, 'backend.ts')],
      /listening on [\d.]+:(\d+)/,
    );
    const configFile = join(dir, 'fleet.json');
    const backendPort = backend.port;
    writeFileSync(configFile, JSON.stringify(fleetConfig(backendPort)));
    // The proxy runs from the build (dist/), as in production: no TypeScript loader in the measured process.
    const portico = await startChild(
      process.execPath,
      ['--input-type=module', '-e', STATIC_PROXY, configFile, join(here, '../dist/proxy/index.js')],
      /listening: port-80 on [\d.]+:(\d+)/,
    );
    // The relay runs from TypeScript through tsx like the backend: its code is too small for that to matter.
    const relay = await startChild(
      process.execPath,
      [...tsx, join(here, 'tcp-relay.ts'), String(backendPort)],
      /listening on [\d.]+:(\d+)/,
    );
    const nginx = has('nginx') ? await startNginx(backendPort, dir) : undefined;
    const nginxPort = nginx?.port;
    const useWrk = has('wrk');
    const closedLoop = useWrk ? closedLoopWrk : closedLoopNode;
    const targets: Target[] = [
      { name: 'backend direct', role: 'backend', port: backendPort, pid: () => backend.pid },
      { name: 'portico', role: 'proxy', port: portico.port, pid: () => portico.pid },
      { name: 'tcp relay (floor)', role: 'proxy', port: relay.port, pid: () => relay.pid },
      // nginx's master only supervises: its one worker does the proxying.
      ...(nginx === undefined
        ? []
        : [
            {
              name: 'nginx (1 worker)',
              role: 'proxy' as const,
              port: nginx.port,
              pid: () => childOf(nginx.pid),
            },
          ]),
    ];
    if (nginxPort === undefined) console.log('nginx not installed: measuring Portico only');
    // The machine is shared: rounds interleave the targets and the median round is reported, so a burst of
    // someone else's work does not land on one target only.
    if (flags.only !== 'latency') await throughputPhase(targets, closedLoop, useWrk, nginxPort);
    if (flags.only !== 'throughput') await latencyPhase(targets, nginxPort);
    console.log(`\nload average at end: ${load()}`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function throughputPhase(
  targets: Target[],
  closedLoop: typeof closedLoopWrk,
  useWrk: boolean,
  nginxPort: number | undefined,
): Promise<void> {
  console.log(
    `\nthroughput: ${useWrk ? 'wrk' : 'node closed loop'}, ${CONNECTIONS} keep-alive connections, median of ${ROUNDS} rounds of ${THROUGHPUT_SECONDS} s`,
  );
  // Equal warm-up for every target (a fresh Node process needs traffic before its JIT settles).
  for (const { port } of targets) await closedLoop(port, CONNECTIONS, WARMUP_SECONDS);
  const throughput = await rounds(targets, THROUGHPUT_SECONDS, (port) =>
    closedLoop(port, CONNECTIONS, THROUGHPUT_SECONDS),
  );
  for (const { name } of targets) console.log(row(name, throughput.medians.get(name)!));
  if (nginxPort !== undefined) {
    const ratio = pairedMedian(
      throughput,
      'portico',
      'nginx (1 worker)',
      (p, n) => (p.requestsPerSecond / n.requestsPerSecond) * 100,
    );
    console.log(
      `portico / nginx throughput: ${fmt(ratio, 1)} % (median of per-round ratios; target >= 60 %)`,
    );
    const cpuRatio = pairedMedian(
      throughput,
      'portico',
      'nginx (1 worker)',
      (p, n) => ((n.cpuUsPerRequest ?? Number.NaN) / (p.cpuUsPerRequest ?? Number.NaN)) * 100,
    );
    // The CPU figure is steadier on a busy machine: nginx's CPU per request over Portico's.
    console.log(`portico / nginx by CPU per request: ${fmt(cpuRatio, 1)} % (median of per-round ratios)`);
  }
}

/** Pins this process (the load generator) and every target as PIN_MODE says; describes what it did. */
function placeProcesses(targets: Target[]): string {
  const where = placement(PIN_MODE, availableParallelism());
  if (where === undefined) return 'CPU placement: off (the scheduler decides)';
  let ok = pin(process.pid, where.load);
  for (const target of targets) {
    const pid = target.pid();
    if (pid !== undefined) ok = pin(pid, target.role === 'backend' ? where.backend : where.proxy) && ok;
  }
  if (!ok) return 'CPU placement: could not pin (taskset missing or refused): the scheduler decides';
  return `CPU placement (--pin ${PIN_MODE}): load generator on CPU ${where.load}, backend on CPU ${where.backend}, proxies on CPU ${where.proxy}`;
}

async function latencyPhase(targets: Target[], nginxPort: number | undefined): Promise<void> {
  console.log(
    `\nlatency at a fixed ${FIXED_RATE} req/s (raw-socket open loop), ${FIXED_RATE_SECONDS} s per target in interleaved slices of about ${FIXED_RATE_SLICE_SECONDS} s, percentiles over all samples`,
  );
  console.log(placeProcesses(targets));
  const stopSpinners = flags.awake === 'on' ? keepCpusAwake(availableParallelism()) : undefined;
  if (stopSpinners !== undefined) process.once('exit', stopSpinners);
  console.log(
    stopSpinners !== undefined
      ? 'vCPUs kept awake (--awake on): an idle-priority busy loop per CPU, as idle=poll would'
      : 'vCPUs may halt when idle (--awake off, or chrt/taskset missing): wakeups cost what the VM charges',
  );
  try {
    await latencyRounds(targets, nginxPort);
  } finally {
    stopSpinners?.();
  }
}

/** One latency slice of one target, with the CPU steal the whole machine saw meanwhile. */
interface Slice extends OpenLoopResult {
  stealPercent: number;
}

async function latencyRounds(targets: Target[], nginxPort: number | undefined): Promise<void> {
  const timesBefore = cpuTimes();
  // A fresh Node process needs about 2 s of traffic (JIT, pools) before its latency is steady.
  for (const { port } of targets) await fixedRateRaw(port, FIXED_RATE, 1.5, 0);
  const slices = Math.max(1, Math.round(FIXED_RATE_SECONDS / FIXED_RATE_SLICE_SECONDS));
  const sliceSeconds = FIXED_RATE_SECONDS / slices;
  const fixed = await rounds(
    targets,
    sliceSeconds + FIXED_RATE_WARMUP_SECONDS,
    async (port): Promise<Slice> => {
      const before = cpuTimes();
      const result = await fixedRateRaw(port, FIXED_RATE, sliceSeconds, FIXED_RATE_WARMUP_SECONDS);
      return { ...result, stealPercent: stealPercent(before, cpuTimes()) };
    },
    slices,
  );
  const lags = [...fixed.perRound.values()].flat().map((slice) => slice.lagP99Ms);
  console.log(`load generator: p99 lateness of its sends ${fmt(median(lags), 3)} ms (median of slices)`);
  // Time the hypervisor gave to other guests: every stolen millisecond stalls whatever was on that vCPU.
  console.log(`CPU steal during the latency rounds: ${fmt(stealPercent(timesBefore, cpuTimes()), 1)} %`);
  const report = (pick: (slice: Slice) => boolean): void => {
    const pooled = new Map<string, LoadResult>();
    for (const { name } of targets) {
      const all = fixed.perRound.get(name)!;
      const picked = all.filter(pick);
      const latencies = picked.flatMap((slice) => slice.latencies);
      const errors = picked.reduce((sum, slice) => sum + slice.errors, 0);
      // summarize() sorts the samples, so the p99.9 is read after it.
      const result = summarize(latencies, picked.length * sliceSeconds, errors);
      const p999 = percentile(latencies, 99.9);
      pooled.set(name, { ...result, cpuUsPerRequest: fixed.medians.get(name)!.cpuUsPerRequest });
      console.log(
        `${row(name, pooled.get(name)!)}   p99.9 ${fmt(p999)} ms   slices ${picked.length}/${all.length}`,
      );
    }
    // Added latency: a target's percentile over its samples minus the direct one's.
    const direct = pooled.get('backend direct')!;
    const added = (name: string): string => {
      const r = pooled.get(name)!;
      return `p50 ${fmt(r.p50Ms - direct.p50Ms, 3)} ms, p99 ${fmt(r.p99Ms - direct.p99Ms, 3)} ms`;
    };
    console.log(`portico added latency: ${added('portico')} (target: p99 <= 1 ms)`);
    if (nginxPort !== undefined) console.log(`nginx added latency:   ${added('nginx (1 worker)')}`);
    console.log(`tcp relay added:       ${added('tcp relay (floor)')} (one more process hop, no HTTP)`);
  };
  console.log('\nall slices:');
  report(() => true);
  // A slice the hypervisor stole from measures the host; the same selection applies to every target.
  console.log(`\nslices the hypervisor stole at most one 10 ms tick from (<= ${STEAL_FREE_PERCENT} %):`);
  report((slice) => slice.stealPercent <= STEAL_FREE_PERCENT);
}

await main();

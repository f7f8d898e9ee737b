// `npm run bench:proxy`: Portico's proxy against nginx (upstream keep-alive), each with one and with two
// workers, and a byte relay (the floor: one more Node process hop, no HTTP), in front of the same node:http
// backend, same load generator, same run. Portico's two workers run on this Node (round robin by the primary
// on Node 20) and, when the image's Node can be had, on it too (SO_REUSEPORT on Node 26). Prints throughput,
// p50/p99, CPU per request over every process of a target, how connections spread over Portico's workers,
// the 1→2 worker scaling of both, and the latency each adds over a direct request at a fixed 1,000
// requests/s, with the CPU steal seen meanwhile. Bounded: about 9 min with the defaults.
// Options:
//   --latency-seconds N  measured seconds per target at 1,000 req/s (default 40), in interleaved 2 s slices
//   --pin one|client|split|off  CPU placement in the latency phase (default one; see cpu-placement.ts)
//   --awake on|off       keep vCPUs from halting in the latency phase (default on; see keepCpusAwake)
//   --only throughput|latency  one phase alone
//   --image-node on|off  also run Portico's two workers on the image's Node (default on)
//   --compare-node V     also run them on Node V from the npm registry (e.g. 24.21.0, an earlier image's), so a
//                        runtime move is measured old against new in one run
//   --baseline DIR       also run one worker of another build (a checkout of an earlier commit, built with
//                        `npm run build`): a change's before and after in the same run (the h2 half too)
//   --h2 on|off          then run the HTTP/2 half, bench/proxy-h2.ts (default on; off with --only)
//   --layer4 on|off      then the layer-4 half, bench/proxy-layer4.ts: TCP and TLS passthrough next to nginx's
//                        stream module (default on; off with --only)
//   --features on|off    then the route-feature half, bench/proxy-features.ts: what CORS, a retry and a mirror
//                        cost, next to nginx doing the same (default on; off with --only)
//   --install on|off     apt-get the peers that are missing: nginx, wrk, h2load (default on; see peers.ts)
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bestAcceptBalancing } from '../src/proxy/workers/pool.js';
import { nodeRuntime } from '../toolchain/node-runtime.js';
import { cpuTimes, keepCpusAwake, parsePinMode, pin, placement, stealPercent } from './cpu-placement.js';
import { closedLoopNode, closedLoopWrk, type LoadResult, median, percentile, summarize } from './load.js';
import { startNginx } from './nginx.js';
import { fixedRateRaw, type OpenLoopResult } from './open-loop.js';
import { ensurePeers, installFlag, NGINX, WRK } from './peers.js';
import { children, cpuMicrosOf, freePort, processTree, startChild } from './processes.js';
import {
  configForBuild,
  externalAuthFleetConfig,
  fleetConfig,
  jwtBench,
  nginxH1,
  rateLimitedFleetConfig,
  STATIC_PROXY,
} from './proxy-fleet.js';

const REDIS_SERVER = '/usr/bin/redis-server';

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
    'image-node': { type: 'string', default: 'on' },
    'compare-node': { type: 'string' },
    baseline: { type: 'string' },
    h2: { type: 'string' },
    layer4: { type: 'string' },
    features: { type: 'string' },
    install: { type: 'string' },
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
/** What is measured: a name, its port, and the process whose CPU time it costs (when known). */
interface Target {
  name: string;
  /** What it is, for CPU placement: the backend itself, or something in front of it. */
  role: 'backend' | 'proxy';
  port: number;
  /** The processes serving the port (a primary and its workers): their CPU time is the target's. */
  pids: () => number[];
  /** Portico's metrics port, to read how connections spread over its workers. */
  metricsPort?: number;
}

/** nginx with `workers` workers proxying to the backend over kept-alive HTTP/1.1 connections. */
async function startNginxH1(
  backendPort: number,
  parent: string,
  workers: number,
): Promise<{ port: number; pid: number | undefined }> {
  const port = await freePort();
  const { pid } = await startNginx(parent, `nginx-${workers}`, workers, nginxH1(backendPort, port), [port]);
  return { port, pid };
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
      const pids = target.pids();
      const before = cpuMicrosOf(pids);
      const result = await measure(target.port);
      const after = cpuMicrosOf(pids);
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

const PORTICO_1 = 'portico (1 worker)';
const PORTICO_1_LOGGED = 'portico (1 worker, access log on)';
const PORTICO_1_JWT = 'portico (1 worker, JWT policy)';
const PORTICO_1_BASELINE = 'portico (1 worker, --baseline build)';
const PORTICO_1_AUTH = 'portico (1 worker, ExternalAuth HTTP)';
const NGINX_1 = 'nginx (1 worker)';
const NGINX_2 = 'nginx (2 workers)';

/** The image's Node (toolchain/node-runtime.ts), or `version`, when it differs from this one and can be had. */
function imageNodePath(wanted?: string): { path: string; version: string; balancing: string } | undefined {
  try {
    const path = nodeRuntime(wanted);
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
    if (version === process.version) return undefined;
    return { path, version, balancing: bestAcceptBalancing(version.slice(1)) };
  } catch (error) {
    console.log(`the image's Node is not available (${(error as Error).message}): this Node only`);
    return undefined;
  }
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i++) await new Promise((r) => setTimeout(r, 50));
}

/** How Portico's workers shared the connections so far (its per-worker accepted counter). */
async function printSpread(target: Target): Promise<void> {
  const text = await (await fetch(`http://127.0.0.1:${target.metricsPort}/metrics`)).text();
  const counts = [...text.matchAll(/^portico_proxy_worker_connections_total\{worker="(\d+)"\} (\d+)/gm)].map(
    (m) => Number(m[2]),
  );
  if (counts.length < 2) return;
  const total = counts.reduce((a, b) => a + b, 0);
  const shares = counts.map((n) => `${fmt((n / total) * 100, 0)} %`).join(' / ');
  console.log(`${target.name}: connections per worker ${counts.join(' / ')} (${shares})`);
}

async function main(): Promise<void> {
  const peers = ensurePeers([NGINX, WRK], installFlag(flags.install));
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
    // Portico runs from the build (dist/), as in production: no TypeScript loader in the measured process.
    const jwt = await jwtBench();
    const jwtConfigFile = join(dir, 'fleet-jwt.json');
    writeFileSync(jwtConfigFile, JSON.stringify(fleetConfig(backendPort, jwt.policy)));
    const startPortico = async (
      name: string,
      node: string,
      workers: number,
      accessLogFile?: string,
      build = join(here, '..'),
      config = configFile,
    ): Promise<Target> => {
      const entry = join(build, 'dist/proxy/index.js');
      const port = await freePort();
      const logArg = accessLogFile === undefined ? [] : [accessLogFile];
      const child = await startChild(
        node,
        ['--input-type=module', '-e', STATIC_PROXY, config, entry, String(workers), String(port), ...logArg],
        /listening: port-80 on [\d.]+:(\d+)/,
      );
      await until(() => /listening: metrics on [\d.]+:\d+/.test(child.output()));
      const metricsPort = Number(/listening: metrics on [\d.]+:(\d+)/.exec(child.output())![1]);
      return { name, role: 'proxy', port: child.port, pids: () => processTree(child.pid), metricsPort };
    };
    const here20 = `${process.version}, ${bestAcceptBalancing()}`;
    const portico = await startPortico(PORTICO_1, process.execPath, 1);
    const porticoLogged = await startPortico(PORTICO_1_LOGGED, process.execPath, 1, join(dir, 'access.log'));
    // The same route behind an ExternalAuth filter: its authorization service (another backend process, which
    // answers 200 to everything) is asked about every request; its CPU time counts as the target's.
    const authService = await startChild(
      process.execPath,
      [...tsx, join(here, 'backend.ts')],
      /listening on [\d.]+:(\d+)/,
    );
    const authConfigFile = join(dir, 'fleet-auth.json');
    writeFileSync(authConfigFile, JSON.stringify(externalAuthFleetConfig(backendPort, authService.port)));
    const porticoAuthProxy = await startPortico(
      PORTICO_1_AUTH,
      process.execPath,
      1,
      undefined,
      undefined,
      authConfigFile,
    );
    const porticoAuth: Target = {
      ...porticoAuthProxy,
      pids: () => [...porticoAuthProxy.pids(), ...processTree(authService.pid)],
    };
    const baselineConfig = join(dir, 'fleet-baseline.json');
    if (flags.baseline !== undefined)
      writeFileSync(
        baselineConfig,
        JSON.stringify(await configForBuild(flags.baseline, fleetConfig(backendPort))),
      );
    const baseline =
      flags.baseline === undefined
        ? undefined
        : await startPortico(
            PORTICO_1_BASELINE,
            process.execPath,
            1,
            undefined,
            flags.baseline,
            baselineConfig,
          );
    const limited = await startRateLimited(dir, backendPort, (name, file) =>
      startPortico(name, process.execPath, 1, undefined, join(here, '..'), file),
    );
    const portico2 = await startPortico(`portico (2 workers, ${here20})`, process.execPath, 2);
    const imageNode = flags['image-node'] === 'on' ? imageNodePath() : undefined;
    const portico2Image =
      imageNode === undefined
        ? undefined
        : await startPortico(
            `portico (2 workers, ${imageNode.version}, ${imageNode.balancing})`,
            imageNode.path,
            2,
          );
    const otherNode = flags['compare-node'] === undefined ? undefined : imageNodePath(flags['compare-node']);
    const portico2Other =
      otherNode === undefined
        ? undefined
        : await startPortico(
            `portico (2 workers, ${otherNode.version}, ${otherNode.balancing})`,
            otherNode.path,
            2,
          );
    // The relay runs from TypeScript through tsx like the backend: its code is too small for that to matter.
    const relay = await startChild(
      process.execPath,
      [...tsx, join(here, 'tcp-relay.ts'), String(backendPort)],
      /listening on [\d.]+:(\d+)/,
    );
    const nginx = peers.has('nginx') ? await startNginxH1(backendPort, dir, 1) : undefined;
    const nginx2 = peers.has('nginx') ? await startNginxH1(backendPort, dir, 2) : undefined;
    const nginxPort = nginx?.port;
    const useWrk = peers.has('wrk');
    const closedLoop = useWrk ? closedLoopWrk : closedLoopNode;
    const nginxTarget = (name: string, n: { port: number; pid: number | undefined }): Target => ({
      name,
      role: 'proxy',
      port: n.port,
      pids: () => processTree(n.pid),
    });
    const targets: Target[] = [
      { name: 'backend direct', role: 'backend', port: backendPort, pids: () => processTree(backend.pid) },
      portico,
      porticoLogged,
      ...limited,
      porticoAuth,
      ...(baseline === undefined ? [] : [baseline]),
      portico2,
      ...(portico2Image === undefined ? [] : [portico2Image]),
      ...(portico2Other === undefined ? [] : [portico2Other]),
      { name: 'tcp relay (floor)', role: 'proxy', port: relay.port, pids: () => processTree(relay.pid) },
      ...(nginx === undefined ? [] : [nginxTarget(NGINX_1, nginx)]),
      ...(nginx2 === undefined ? [] : [nginxTarget(NGINX_2, nginx2)]),
    ];
    if (nginxPort === undefined) console.log('nginx not installed: measuring Portico only');
    if (!useWrk) console.log('wrk not installed: the throughput phase uses a Node closed loop');
    // The machine is shared: rounds interleave the targets and the median round is reported, so a burst of
    // someone else's work does not land on one target only.
    if (flags.only !== 'latency') {
      const throughput = await throughputPhase(targets, closedLoop, useWrk, nginxPort);
      await printRateLimitCosts(throughput, limited);
      const withJwt = await startPortico(
        PORTICO_1_JWT,
        process.execPath,
        1,
        undefined,
        undefined,
        jwtConfigFile,
      );
      await jwtPhase(portico, withJwt, closedLoop, jwt, dir);
    }
    for (const target of targets) if (target.metricsPort !== undefined) await printSpread(target);
    if (flags.only !== 'throughput') await latencyPhase(targets);
    console.log(`\nload average at end: ${load()}`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const PORTICO_1_LOCAL = 'portico (1 worker, local rate limit)';
const PORTICO_1_GLOBAL = 'portico (1 worker, global rate limit)';

/**
 * Portico with the same route under a Local and (with Debian's redis-server installed) a Global rate limit that
 * never refuses, the Global one against its own redis-server on loopback (no persistence).
 */
async function startRateLimited(
  dir: string,
  backendPort: number,
  start: (name: string, configFile: string) => Promise<Target>,
): Promise<Target[]> {
  const localFile = join(dir, 'fleet-local.json');
  writeFileSync(localFile, JSON.stringify(rateLimitedFleetConfig(backendPort, 'Local')));
  const out = [await start(PORTICO_1_LOCAL, localFile)];
  try {
    execFileSync(REDIS_SERVER, ['--version'], { stdio: 'ignore' });
  } catch {
    console.log(
      `${REDIS_SERVER} not installed (apt-get install -y redis-server): no global rate limit figure`,
    );
    return out;
  }
  const redisPort = await freePort();
  const args = [
    '--port',
    String(redisPort),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ];
  await startChild(REDIS_SERVER, args, /Ready to accept connections/);
  const globalFile = join(dir, 'fleet-global.json');
  writeFileSync(
    globalFile,
    JSON.stringify(rateLimitedFleetConfig(backendPort, 'Global', `127.0.0.1:${redisPort}`)),
  );
  out.push(await start(PORTICO_1_GLOBAL, globalFile));
  return out;
}

/** A counter's value summed over its series with the given labels, from a Portico metrics port. */
async function counterSum(port: number, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm')))
    if (m[1]!.includes(labels)) sum += Number(m[2]);
  return sum;
}

/** Each rate limit's throughput and CPU next to the same route without one, and Redis round trips per 1,000. */
async function printRateLimitCosts(throughput: RoundResults, limited: Target[]): Promise<void> {
  const rps = (x: LoadResult, y: LoadResult) => (x.requestsPerSecond / y.requestsPerSecond) * 100;
  const cpu = (x: LoadResult, y: LoadResult) =>
    (x.cpuUsPerRequest ?? Number.NaN) - (y.cpuUsPerRequest ?? Number.NaN);
  for (const target of limited) {
    console.log(
      `${target.name} / ${PORTICO_1}: throughput ${fmt(pairedMedian(throughput, target.name, PORTICO_1, rps), 1)} %, cpu ${fmt(pairedMedian(throughput, target.name, PORTICO_1, cpu), 1)} us/req more`,
    );
  }
  const global = limited.find((t) => t.name === PORTICO_1_GLOBAL);
  if (global?.metricsPort === undefined) return;
  const trips = await counterSum(
    global.metricsPort,
    'portico_rate_limit_store_events_total',
    'event="round_trip"',
  );
  const decided = await counterSum(global.metricsPort, 'portico_rate_limit_decisions_total', 'decision=');
  console.log(
    `${PORTICO_1_GLOBAL}: ${fmt((trips / decided) * 1000, 1)} Redis round trips per 1,000 requests (${trips} for ${decided})`,
  );
}

/** More distinct tokens than the JWT step keeps verified (1,024), sent in turn: every one is checked afresh. */
const JWT_DISTINCT_TOKENS = 2048;

/** A wrk script sending `tokens` in turn, one per request (wrk.format with its own headers, Host included). */
function tokensScript(dir: string, tokens: string[]): string {
  const file = join(dir, 'jwt-tokens.lua');
  writeFileSync(
    file,
    `local tokens = {${tokens.map((t) => `"${t}"`).join(',')}}
local i = 0
request = function()
  i = i % #tokens + 1
  return wrk.format(nil, nil, { ["Host"] = "bench.test", ["Authorization"] = "Bearer " .. tokens[i] })
end
`,
  );
  return file;
}

/**
 * The same route without a policy and with a JWT one, both sent the same token, rounds interleaved; then (with
 * wrk) the JWT route sent more distinct tokens than it keeps verified, so each is signature-checked.
 */
async function jwtPhase(
  plain: Target,
  withJwt: Target,
  closedLoop: typeof closedLoopWrk,
  jwt: Awaited<ReturnType<typeof jwtBench>>,
  dir: string,
): Promise<void> {
  const headers = { authorization: `Bearer ${jwt.token}` };
  console.log(
    `\nJWT validation (RS256, keys inline, one claim to a header), the token sent to both, ${ROUNDS} rounds:`,
  );
  for (const { port } of [plain, withJwt]) await closedLoop(port, CONNECTIONS, WARMUP_SECONDS, headers);
  const result = await rounds([plain, withJwt], THROUGHPUT_SECONDS, (port) =>
    closedLoop(port, CONNECTIONS, THROUGHPUT_SECONDS, headers),
  );
  const a = result.medians.get(plain.name)!;
  const b = result.medians.get(withJwt.name)!;
  console.log(row(plain.name, a));
  console.log(row(withJwt.name, b));
  const added = (x: LoadResult) => (x.cpuUsPerRequest ?? Number.NaN) - (a.cpuUsPerRequest ?? Number.NaN);
  console.log(
    `JWT, a token verified before: ${fmt((b.requestsPerSecond / a.requestsPerSecond) * 100, 1)} % of the throughput without a policy; +${fmt(added(b), 1)} µs of CPU per request`,
  );
  if (closedLoop !== closedLoopWrk) return;
  const script = tokensScript(dir, await jwt.tokens(JWT_DISTINCT_TOKENS));
  const fresh = await rounds([withJwt], THROUGHPUT_SECONDS, (port) =>
    closedLoopWrk(port, CONNECTIONS, THROUGHPUT_SECONDS, {}, 'http', { script }),
  );
  const c = fresh.medians.get(withJwt.name)!;
  console.log(row(`${withJwt.name}, ${JWT_DISTINCT_TOKENS} tokens in turn`, c));
  console.log(
    `JWT, every token new to the proxy: ${fmt((c.requestsPerSecond / a.requestsPerSecond) * 100, 1)} % of the throughput without a policy (its median above); +${fmt(added(c), 1)} µs of CPU per request`,
  );
}

async function throughputPhase(
  targets: Target[],
  closedLoop: typeof closedLoopWrk,
  useWrk: boolean,
  nginxPort: number | undefined,
): Promise<RoundResults> {
  console.log(
    `\nthroughput: ${useWrk ? 'wrk' : 'node closed loop'}, ${CONNECTIONS} keep-alive connections, median of ${ROUNDS} rounds of ${THROUGHPUT_SECONDS} s`,
  );
  // Equal warm-up for every target (a fresh Node process needs traffic before its JIT settles).
  for (const { port } of targets) await closedLoop(port, CONNECTIONS, WARMUP_SECONDS);
  const throughput = await rounds(targets, THROUGHPUT_SECONDS, (port) =>
    closedLoop(port, CONNECTIONS, THROUGHPUT_SECONDS),
  );
  for (const { name } of targets) console.log(row(name, throughput.medians.get(name)!));
  const rps = (p: LoadResult, n: LoadResult): number => (p.requestsPerSecond / n.requestsPerSecond) * 100;
  const cpuMore = (a: LoadResult, p: LoadResult): number =>
    (a.cpuUsPerRequest ?? Number.NaN) - (p.cpuUsPerRequest ?? Number.NaN);
  console.log(
    `${PORTICO_1_AUTH} / ${PORTICO_1}: throughput ${fmt(pairedMedian(throughput, PORTICO_1_AUTH, PORTICO_1, rps), 1)} %, CPU per request ${fmt(pairedMedian(throughput, PORTICO_1_AUTH, PORTICO_1, cpuMore), 1)} µs more (the proxy and its authorization service together: one HTTP call per request)`,
  );
  if (nginxPort === undefined) return throughput;
  // The CPU figure is steadier on a busy machine: nginx's CPU per request over Portico's.
  const cpu = (p: LoadResult, n: LoadResult): number =>
    ((n.cpuUsPerRequest ?? Number.NaN) / (p.cpuUsPerRequest ?? Number.NaN)) * 100;
  const versus = (portico: string, nginx: string, target: string): void => {
    console.log(
      `${portico} / ${nginx}: throughput ${fmt(pairedMedian(throughput, portico, nginx, rps), 1)} % (target ${target}), by CPU per request ${fmt(pairedMedian(throughput, portico, nginx, cpu), 1)} %`,
    );
  };
  console.log('ratios (median of per-round ratios: both ran back to back in every round):');
  versus(PORTICO_1, NGINX_1, '>= 60 %; 66-76 % before workers');
  console.log(
    `${PORTICO_1_LOGGED} / ${PORTICO_1}: throughput ${fmt(pairedMedian(throughput, PORTICO_1_LOGGED, PORTICO_1, rps), 1)} % (target >= 90 %: the access log costs at most 10 %)`,
  );
  if (throughput.medians.has(PORTICO_1_BASELINE)) {
    console.log(
      `${PORTICO_1} / ${PORTICO_1_BASELINE}: throughput ${fmt(pairedMedian(throughput, PORTICO_1, PORTICO_1_BASELINE, rps), 1)} %, by CPU per request ${fmt(pairedMedian(throughput, PORTICO_1, PORTICO_1_BASELINE, cpu), 1)} % (this build against the baseline; 100 % is no change)`,
    );
  }
  const twoWorkers = targets.filter((t) => t.name.startsWith('portico (2 workers'));
  if (!throughput.medians.has(NGINX_2)) return throughput;
  for (const { name } of twoWorkers) {
    versus(name, NGINX_2, '>= 80 %');
    // 1→2 worker scaling of each, as a ratio of Portico's to nginx's, per round.
    const scaling = median(
      throughput.perRound.get(name)!.map((p2, i) => {
        const p1 = throughput.perRound.get(PORTICO_1)![i]!;
        const n1 = throughput.perRound.get(NGINX_1)![i]!;
        const n2 = throughput.perRound.get(NGINX_2)![i]!;
        return (
          (p2.requestsPerSecond / p1.requestsPerSecond / (n2.requestsPerSecond / n1.requestsPerSecond)) * 100
        );
      }),
    );
    console.log(`${name}: 1→2 worker scaling ${fmt(scaling, 1)} % of nginx's own (target >= 85 %)`);
  }
  return throughput;
}

/** Pins this process (the load generator) and every target as PIN_MODE says; describes what it did. */
function placeProcesses(targets: Target[]): string {
  const where = placement(PIN_MODE, availableParallelism());
  if (where === undefined) return 'CPU placement: off (the scheduler decides)';
  let ok = pin(process.pid, where.load);
  for (const target of targets) {
    for (const pid of target.pids())
      ok = pin(pid, target.role === 'backend' ? where.backend : where.proxy) && ok;
  }
  if (!ok) return 'CPU placement: could not pin (taskset missing or refused): the scheduler decides';
  return `CPU placement (--pin ${PIN_MODE}): load generator on CPU ${where.load}, backend on CPU ${where.backend}, proxies on CPU ${where.proxy}`;
}

async function latencyPhase(targets: Target[]): Promise<void> {
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
    await latencyRounds(targets);
  } finally {
    stopSpinners?.();
  }
}

/** One latency slice of one target, with the CPU steal the whole machine saw meanwhile. */
interface Slice extends OpenLoopResult {
  stealPercent: number;
}

async function latencyRounds(targets: Target[]): Promise<void> {
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
    for (const { name } of targets) {
      if (name === 'backend direct' || name.startsWith('tcp relay')) continue;
      console.log(`${name} added latency: ${added(name)}`);
    }
    console.log(
      'targets: portico (1 worker) p99 <= 1 ms; portico (2 workers) p99 within 1 ms of nginx (2 workers)',
    );
    console.log(`tcp relay added:       ${added('tcp relay (floor)')} (one more process hop, no HTTP)`);
  };
  console.log('\nall slices:');
  report(() => true);
  // A slice the hypervisor stole from measures the host; the same selection applies to every target.
  console.log(`\nslices the hypervisor stole at most one 10 ms tick from (<= ${STEAL_FREE_PERCENT} %):`);
  report((slice) => slice.stealPercent <= STEAL_FREE_PERCENT);
}

/**
 * A half `npm run bench:proxy` runs after this one (proxy-h2.ts: HTTP/2; proxy-layer4.ts: TCP and TLS
 * passthrough; proxy-features.ts: CORS, retries, mirrors), its peers installed the same way.
 */
function runHalf(script: string, extra: string[] = []): Promise<void> {
  const args = [
    '--import',
    'tsx',
    join(here, script),
    ...(flags.install === undefined ? [] : ['--install', flags.install]),
    ...extra,
  ];
  const child = spawn(process.execPath, args, { stdio: 'inherit' });
  return new Promise((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${script} exited ${code}`)))),
  );
}

const halvesByDefault = flags.only === undefined ? 'on' : 'off';
await main();
if ((flags.h2 ?? halvesByDefault) === 'on')
  await runHalf('proxy-h2.ts', flags.baseline === undefined ? [] : ['--baseline', flags.baseline]);
if ((flags.layer4 ?? halvesByDefault) === 'on') await runHalf('proxy-layer4.ts');
if ((flags.features ?? halvesByDefault) === 'on') await runHalf('proxy-features.ts');

// `npm run bench:proxy-instructions`: what one proxied HTTP/1.1 request costs in CPU instructions, counted by
// valgrind's callgrind, for Portico with one worker next to nginx with one worker and a byte relay (Node's own
// floor: two sockets, no HTTP) in front of the same backend. Timings on this shared 2-vCPU machine move by tens
// of percent with other work; instruction counts do not, so a change to the proxy's code can be judged by them.
// They count user space only: the kernel's share (syscalls, loopback TCP) is not in them (--syscalls counts
// the syscalls instead).
// How: each target runs under callgrind with instrumentation off; after --warmup requests (the JIT settles)
// instrumentation goes on, a settling round is dropped, then --rounds rounds of --requests requests each are
// counted (callgrind_control dumps after each), sent over --connections keep-alive connections in a closed
// loop. Prints instructions per request (median round, and the spread), and the ratios to nginx and the relay.
// Options:
//   --requests N (per round, default 5000)  --rounds N (default 5)  --warmup N (default 20000)
//   --connections N (default 50)
//   --targets LIST  of portico, portico-image (Portico on the image's Node), nginx, relay (default all four)
//   --baseline DIR  also Portico from another build (a checkout built with `npm run build`) on each Node: before
//                   and after
//   --headers wrk|browser  the request: wrk's (Host only, as bench:proxy sends) or a browser's dozen headers
//   --annotate N    the N functions with the most instructions in each Portico target's median round
//   --instructions off  no instruction counts (only what the two options below ask for)
//   --syscalls on   also (no valgrind) each target's syscalls per request, by strace -c over the same requests
//   --cpu-prof DIR  also (no valgrind) a V8 CPU profile of Portico over the same requests, and its top functions
//   --out DIR       keep the callgrind dumps (and V8's code maps, with --annotate) in DIR for callgrind_annotate
//   --install off   do not apt-get what is missing (valgrind, strace, nginx)
import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { nodeRuntime } from '../toolchain/node-runtime.js';
import { type CountingClient, countingClient } from './closed-loop-count.js';
import { type FunctionTime, topSelfTime } from './cpu-profile.js';
import { median } from './load.js';
import { startNginx } from './nginx.js';
import { ensurePeers, installFlag, NGINX, STRACE, VALGRIND } from './peers.js';
import { children, freePort, startChild } from './processes.js';
import { configForBuild, fleetConfig, nginxH1, STATIC_PROXY } from './proxy-fleet.js';

const { values: flags } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '20000' },
    connections: { type: 'string', default: '50' },
    targets: { type: 'string', default: 'portico,portico-image,nginx,relay' },
    baseline: { type: 'string' },
    headers: { type: 'string', default: 'wrk' },
    annotate: { type: 'string', default: '0' },
    instructions: { type: 'string', default: 'on' },
    syscalls: { type: 'string', default: 'off' },
    'cpu-prof': { type: 'string' },
    install: { type: 'string' },
    out: { type: 'string' },
  },
});
const REQUESTS = Number(flags.requests);
const ROUNDS = Number(flags.rounds);
const WARMUP = Number(flags.warmup);
const CONNECTIONS = Number(flags.connections);
const ANNOTATE = Number(flags.annotate);
const here = fileURLToPath(new URL('.', import.meta.url));

const REQUEST_HEADS: Record<string, string> = {
  wrk: 'GET / HTTP/1.1\r\nHost: bench.test\r\n\r\n',
  browser:
    'GET /assets/app.js?v=42 HTTP/1.1\r\nHost: bench.test\r\nConnection: keep-alive\r\n' +
    'User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36\r\n' +
    'Accept: */*\r\nAccept-Encoding: gzip, deflate, br\r\nAccept-Language: en-US,en;q=0.9\r\n' +
    'Referer: http://bench.test/\r\nCookie: session=0123456789abcdef; theme=dark\r\n' +
    'Sec-Fetch-Dest: script\r\nSec-Fetch-Mode: no-cors\r\nSec-Fetch-Site: same-origin\r\n' +
    'Cache-Control: no-cache\r\nPragma: no-cache\r\n\r\n',
};
const requestHead = REQUEST_HEADS[flags.headers];
if (requestHead === undefined) throw new Error(`--headers: expected wrk or browser, got ${flags.headers}`);
const REQUEST = Buffer.from(requestHead, 'latin1');

/** One thing measured: how to start it on a port, under `wrap` (a command prefix such as valgrind's). */
interface TargetKind {
  name: string;
  /** `nodeArgs`: options for a Node target's own process (--cpu-prof). */
  start(wrap: string[], dir: string, nodeArgs?: string[]): Promise<{ port: number; pid: number }>;
}

/** Runs `command` under `wrap` and waits for its port in its output. */
async function startWrapped(
  wrap: string[],
  command: string,
  args: string[],
  pattern: RegExp,
): Promise<{ port: number; pid: number }> {
  const [first = command, ...rest] = [...wrap, command];
  const child = await startChild(first, [...rest, ...args], pattern);
  return { port: child.port, pid: child.pid! };
}

function porticoKind(name: string, node: string, build: string, configFile: string): TargetKind {
  return {
    name,
    async start(wrap, _dir, nodeArgs = []) {
      const port = await freePort();
      const entry = join(build, 'dist/proxy/index.js');
      const args = [
        ...nodeArgs,
        '--input-type=module',
        '-e',
        STATIC_PROXY,
        configFile,
        entry,
        '1',
        String(port),
      ];
      return startWrapped(wrap, node, args, /listening: port-80 on [\d.]+:(\d+)/);
    },
  };
}

function nginxKind(backendPort: number): TargetKind {
  return {
    name: 'nginx (1 worker)',
    async start(wrap, dir) {
      const port = await freePort();
      const run = { wrap, single: true, readyMs: 60_000 };
      const { pid } = await startNginx(dir, `nginx-${port}`, 1, nginxH1(backendPort, port), [port], run);
      return { port, pid: pid! };
    },
  };
}

function relayKind(backendPort: number): TargetKind {
  return {
    name: 'tcp relay (Node floor)',
    start: (wrap, _dir, nodeArgs = []) =>
      startWrapped(
        wrap,
        process.execPath,
        [...nodeArgs, '--import', 'tsx', join(here, 'tcp-relay.ts'), String(backendPort)],
        /listening on [\d.]+:(\d+)/,
      ),
  };
}

/** Sends `count` requests; throws if any failed (a broken target must not pass for a cheap one). */
async function send(client: CountingClient, count: number): Promise<void> {
  const run = await client.run(count);
  if (run.errors > 0) throw new Error(`${run.errors} of ${count} requests failed`);
}

function callgrindControl(pid: number, option: string): void {
  execFileSync('callgrind_control', [option, String(pid)], { stdio: 'ignore' });
}

/** The instructions in the newest dump of `base` (callgrind numbers its dumps `base.1`, `base.2`...). */
function lastDump(dir: string, base: string): { file: string; instructions: number } {
  const numbered = readdirSync(dir)
    .filter((f) => f.startsWith(`${base}.`))
    .map((f) => Number(f.slice(base.length + 1)))
    .filter(Number.isInteger)
    .sort((a, b) => a - b);
  const file = join(dir, `${base}.${numbered[numbered.length - 1]}`);
  const totals = /^totals: (\d+)/m.exec(readFileSync(file, 'utf8'));
  if (totals === null) throw new Error(`${file}: no totals line`);
  return { file, instructions: Number(totals[1]) };
}

interface Counted {
  perRequest: number[];
  /** The dump of the median round, for callgrind_annotate. */
  medianFile: string;
  /** Names of JIT-compiled code (--annotate). */
  jitNames: PerfMap | undefined;
}

async function countInstructions(kind: TargetKind, dir: string, index: number): Promise<Counted> {
  const base = `callgrind.${index}`;
  const into = flags.out ?? dir;
  mkdirSync(into, { recursive: true });
  const wrap = [
    'valgrind',
    '--tool=callgrind',
    '--instr-atstart=no',
    `--callgrind-out-file=${join(into, base)}`,
  ];
  // --perf-basic-prof: V8 writes where it put each compiled JS function, to name them in the annotation.
  const { port, pid } = await kind.start(wrap, dir, ANNOTATE > 0 ? ['--perf-basic-prof'] : []);
  const client = countingClient(port, CONNECTIONS, REQUEST);
  try {
    await send(client, WARMUP);
    callgrindControl(pid, '--instr=on');
    // The first counted requests pay for what the pause before them left (an idle-time GC): dropped.
    await send(client, REQUESTS);
    callgrindControl(pid, '--dump');
    const rounds: { file: string; perRequest: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      await send(client, REQUESTS);
      callgrindControl(pid, '--dump');
      const dump = lastDump(into, base);
      rounds.push({ file: dump.file, perRequest: dump.instructions / REQUESTS });
    }
    const sorted = [...rounds].sort((a, b) => a.perRequest - b.perRequest);
    const jitNames = ANNOTATE > 0 ? readPerfMap(pid) : undefined;
    return {
      perRequest: rounds.map((r) => r.perRequest),
      medianFile: sorted[Math.floor(sorted.length / 2)]!.file,
      jitNames,
    };
  } finally {
    client.close();
    process.kill(pid, 'SIGKILL');
    const map = `/tmp/perf-${pid}.map`;
    if (flags.out !== undefined && existsSync(map)) copyFileSync(map, join(flags.out, `${base}.perf.map`));
    rmSync(map, { force: true });
  }
}

/** V8's map of compiled code (`--perf-basic-prof`): start, size and name of each, sorted by start. */
type PerfMap = { start: number; end: number; name: string }[];

function readPerfMap(pid: number): PerfMap | undefined {
  let text: string;
  try {
    text = readFileSync(`/tmp/perf-${pid}.map`, 'utf8');
  } catch {
    return undefined;
  }
  const entries: PerfMap = [];
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m === null) continue;
    const start = Number.parseInt(m[1]!, 16);
    entries.push({ start, end: start + Number.parseInt(m[2]!, 16), name: m[3]! });
  }
  return entries.sort((a, b) => a.start - b.start);
}

/** The compiled function at `address` (the last one mapped there: V8 reuses code space). */
function jitName(map: PerfMap, address: number): string | undefined {
  let found: string | undefined;
  for (const e of map) {
    if (e.start > address) break;
    if (address < e.end) found = e.name;
  }
  return found;
}

/** Syscalls per request by name (no valgrind), counted by strace attached after the warm-up. */
async function countSyscalls(kind: TargetKind, dir: string): Promise<Map<string, number>> {
  const { port, pid } = await kind.start([], dir);
  const client = countingClient(port, CONNECTIONS, REQUEST);
  const out = join(dir, `strace.${pid}`);
  try {
    await send(client, WARMUP);
    const strace = spawn('strace', ['-f', '-c', '-o', out, '-p', String(pid)], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 1000)); // attached to every thread
    await send(client, REQUESTS * ROUNDS);
    const exited = new Promise((r) => strace.once('exit', r));
    strace.kill('SIGINT');
    await exited;
  } finally {
    client.close();
    process.kill(pid, 'SIGKILL');
  }
  const counts = new Map<string, number>();
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    // % time, seconds, usecs/call, calls, [errors,] syscall
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)$/.exec(line);
    if (m !== null && m[2] !== 'total') counts.set(m[2]!, Number(m[1]) / (REQUESTS * ROUNDS));
  }
  return counts;
}

/** A V8 CPU profile of a Node target over the measured requests only (no valgrind): its top functions. */
async function profile(kind: TargetKind, dir: string, profileDir: string): Promise<FunctionTime[]> {
  const into = join(profileDir, `${kind.name.replace(/[^\w.-]+/g, '-')}`);
  mkdirSync(into, { recursive: true });
  const { port, pid } = await kind.start([], dir, ['--cpu-prof', `--cpu-prof-dir=${into}`]);
  const client = countingClient(port, CONNECTIONS, REQUEST);
  await send(client, WARMUP);
  const from = Number(process.hrtime.bigint() / 1000n);
  await send(client, REQUESTS * ROUNDS);
  const to = Number(process.hrtime.bigint() / 1000n);
  client.close();
  // A graceful stop writes the profile.
  const child = children.find((c) => c.pid === pid)!;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(pid, 'SIGTERM');
  await exited;
  const file = readdirSync(into).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`${into}: no profile written`);
  return topSelfTime(join(into, file), from, to, 25);
}

/** Where an instruction count's function belongs, for the breakdown --annotate prints. */
function category(what: string): string {
  if (what.startsWith('JIT ')) {
    if (what.includes('/dist/')) return "Portico's JavaScript";
    if (what.includes('node:')) return "Node's JavaScript (streams, net, buffers, timers)";
    return 'other compiled JavaScript';
  }
  if (what.includes('Builtins_')) return 'V8 builtins (strings, property lookups, typed arrays, calls)';
  if (what.includes('/deps/uv/')) return 'libuv (event loop, socket reads and writes)';
  if (what.includes('libc.so')) return 'libc (malloc, memcpy)';
  if (/\bnode::/.test(what)) return "Node's C++ (callbacks into JS, buffers, stream writes)";
  if (/\bv8::/.test(what)) return 'V8 runtime (garbage collection, string flattening, API)';
  return 'other';
}

/**
 * callgrind_annotate's top functions by their own instructions, per request (JIT code named by V8's map), and
 * every function's instructions summed by where it belongs.
 */
function annotate({ medianFile, jitNames }: Counted): void {
  const text = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', medianFile], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const lines = text.split('\n').filter((l) => /^\s*[\d,]+ \(/.test(l) && !l.includes('PROGRAM TOTALS'));
  const sums = new Map<string, number>();
  let shown = 0;
  for (const line of lines) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (m === null) continue;
    const perRequest = Number(m[1]!.replaceAll(',', '')) / REQUESTS;
    let what = m[2]!;
    const jit = /^\?\?\?:0x([0-9a-f]+) \[\?\?\?\]$/.exec(what);
    if (jit !== null) what = `JIT ${(jitNames && jitName(jitNames, Number.parseInt(jit[1]!, 16))) ?? what}`;
    sums.set(category(what), (sums.get(category(what)) ?? 0) + perRequest);
    if (shown++ < ANNOTATE) console.log(`    ${fmt(perRequest).padStart(7)}  ${what.slice(0, 150)}`);
  }
  console.log("  by where the instructions are (each function's own):");
  for (const [name, n] of [...sums].sort((a, b) => b[1] - a[1]))
    console.log(`    ${fmt(n).padStart(7)}  ${name}`);
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function printRatios(results: Map<string, Counted>): void {
  const nginx = results.get('nginx (1 worker)');
  const relay = results.get('tcp relay (Node floor)');
  for (const [name, counted] of results) {
    if (!name.startsWith('portico')) continue;
    const m = median(counted.perRequest);
    const parts: string[] = [];
    if (nginx !== undefined) parts.push(`${(m / median(nginx.perRequest)).toFixed(2)}x nginx's`);
    if (relay !== undefined) parts.push(`${(m / median(relay.perRequest)).toFixed(2)}x the relay's`);
    if (parts.length > 0) console.log(`${name}: ${parts.join(', ')}`);
  }
}

function targetKinds(
  backendPort: number,
  configFiles: { current: string; baseline: string },
  nginx: boolean,
): TargetKind[] {
  const wanted = new Set(flags.targets.split(','));
  const builds: [string, string, string][] = [['', join(here, '..'), configFiles.current]];
  if (flags.baseline !== undefined) builds.push([', --baseline', flags.baseline, configFiles.baseline]);
  const nodes: [string, string][] = [];
  if (wanted.has('portico')) nodes.push([process.execPath, process.version]);
  if (wanted.has('portico-image')) {
    const node = nodeRuntime();
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    if (version !== process.version) nodes.push([node, version]);
  }
  const kinds: TargetKind[] = [];
  // Each build on each Node, a build's runs next to each other.
  for (const [node, version] of nodes) {
    for (const [label, build, configFile] of builds)
      kinds.push(porticoKind(`portico (1 worker, ${version}${label})`, node, build, configFile));
  }
  if (wanted.has('nginx') && nginx) kinds.push(nginxKind(backendPort));
  if (wanted.has('relay')) kinds.push(relayKind(backendPort));
  return kinds;
}

async function measureAll(kinds: TargetKind[], dir: string): Promise<void> {
  console.log(
    `${ROUNDS} rounds of ${REQUESTS} requests (${flags.headers} headers, ${REQUEST.length} bytes) over ${CONNECTIONS} connections after ${WARMUP} warm-up requests; user-space instructions per request (median round, then every round):`,
  );
  const results = new Map<string, Counted>();
  for (const [i, kind] of kinds.entries()) {
    const counted = await countInstructions(kind, dir, i);
    results.set(kind.name, counted);
    const rounds = counted.perRequest.map(fmt).join(' ');
    console.log(`${kind.name.padEnd(44)} ${fmt(median(counted.perRequest)).padStart(9)}   (${rounds})`);
    if (ANNOTATE > 0 && kind.name.startsWith('portico')) annotate(counted);
  }
  printRatios(results);
}

async function main(): Promise<void> {
  const instructions = flags.instructions !== 'off';
  const syscalls = flags.syscalls === 'on';
  const peers = [...(instructions ? [VALGRIND] : []), NGINX, ...(syscalls ? [STRACE] : [])];
  const present = ensurePeers(peers, installFlag(flags.install));
  if (instructions && !present.has('valgrind')) throw new Error('valgrind is needed to count instructions');
  const load = loadavg().map((n) => n.toFixed(2));
  console.log(`load average at start: ${load.join(' ')} (the counts do not depend on it)`);
  const dir = mkdtempSync(join(tmpdir(), 'portico-bench-instructions-'));
  try {
    const backendScript = join(here, 'backend.ts');
    const backend = await startChild(process.execPath, ['--import', 'tsx', backendScript], /on [\d.]+:(\d+)/);
    const configFile = join(dir, 'fleet.json');
    writeFileSync(configFile, JSON.stringify(fleetConfig(backend.port)));
    const baselineFile = join(dir, 'fleet-baseline.json');
    if (flags.baseline !== undefined)
      writeFileSync(
        baselineFile,
        JSON.stringify(await configForBuild(flags.baseline, fleetConfig(backend.port))),
      );
    const kinds = targetKinds(
      backend.port,
      { current: configFile, baseline: baselineFile },
      present.has('nginx'),
    );
    if (instructions) await measureAll(kinds, dir);
    if (syscalls && present.has('strace')) {
      console.log('\nsyscalls per request (strace -c over the same requests, no valgrind):');
      for (const kind of kinds) {
        const counts = await countSyscalls(kind, dir);
        const total = [...counts.values()].reduce((a, b) => a + b, 0);
        const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 8);
        const named = top.map(([n, c]) => `${n} ${c.toFixed(2)}`).join(', ');
        console.log(`${kind.name.padEnd(44)} ${total.toFixed(2).padStart(6)}   ${named}`);
      }
    }
    const profileDir = flags['cpu-prof'];
    if (profileDir !== undefined) {
      for (const kind of kinds.filter((k) => k.name.startsWith('portico'))) {
        console.log(`\n${kind.name}: CPU profile (${profileDir}), own time over the measured requests:`);
        for (const f of await profile(kind, dir, profileDir))
          console.log(`  ${(f.share * 100).toFixed(1).padStart(5)} %  ${f.name}`);
      }
    }
  } finally {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

// Closed-loop load generators: wrk when installed, else one in node. The fixed-rate (open-loop) generator
// is open-loop.ts.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** CPU time of the serving process per request (filled in by the caller that knows the process). */
  cpuUsPerRequest?: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * The median of `values`, in any order (left as they are): `percentile` 50 of them sorted, so of an even count
 * the upper of the two middle values (not their mean); NaN for none.
 */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return percentile(sorted, 50);
}

/** Throughput and latency percentiles of one measured phase (sorts `latencies` in place). */
export function summarize(latencies: number[], seconds: number, errors: number): LoadResult {
  latencies.sort((a, b) => a - b);
  return {
    requestsPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors,
  };
}

function once(agent: Agent, port: number, headers: Readonly<Record<string, string>>): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/', agent, headers: { host: 'bench.test', ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
        res.on('error', () => resolve(false));
      },
    );
    req.on('error', () => resolve(false));
    req.end();
  });
}

export async function closedLoopNode(
  port: number,
  connections: number,
  seconds: number,
  headers: Readonly<Record<string, string>> = {},
): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t = performance.now();
      if (await once(agent, port, headers)) latencies.push(performance.now() - t);
      else errors++;
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  agent.destroy();
  return summarize(latencies, seconds, errors);
}

function wrkDuration(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (m === null) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

/** What wrk sends besides its headers: a path other than `/`, a method other than GET, or a Lua script's requests. */
export interface WrkRequest {
  path?: string;
  method?: string;
  /** A wrk Lua script (file) that makes the requests; `method` is then ignored. */
  script?: string;
}

/** wrk sets the method only from a Lua script: one that does just that, written once per method. */
function methodScript(method: string): string[] {
  if (method === 'GET') return [];
  const file = join(tmpdir(), `portico-wrk-${method.toLowerCase()}.lua`);
  writeFileSync(file, `wrk.method = "${method}"\n`);
  return ['-s', file];
}

export async function closedLoopWrk(
  port: number,
  connections: number,
  seconds: number,
  headers: Readonly<Record<string, string>> = {},
  scheme: 'http' | 'https' = 'http',
  sent: WrkRequest = {},
): Promise<LoadResult> {
  const { stdout } = await promisify(execFile)('wrk', [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    ...(sent.script === undefined ? methodScript(sent.method ?? 'GET') : ['-s', sent.script]),
    '-H',
    'Host: bench.test',
    ...Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
    `${scheme}://127.0.0.1:${port}${sent.path ?? '/'}`,
  ]);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const p50 = wrkDuration(/\s50%\s+(\S+)/.exec(stdout)?.[1] ?? '');
  const p99 = wrkDuration(/\s99%\s+(\S+)/.exec(stdout)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  const errors =
    non2xx + (socketErrors === null ? 0 : socketErrors.slice(1).reduce((s, v) => s + Number(v), 0));
  return { requestsPerSecond: rps, p50Ms: p50, p99Ms: p99, errors };
}

// `node --import tsx bench/upstream-http1.ts`: why the proxy forwards with its own HTTP/1.1 client. Three
// minimal forwarders, node:http's keep-alive Agent, an undici Pool and Portico's EndpointPool, in front of the
// same backend, measured in the same run (interleaved rounds, median reported). About 35 s.
import { execFileSync, spawn } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { EndpointPool, UpstreamExchange } from '../src/proxy/upstream/http1.js';
import type { UpstreamHead } from '../src/proxy/wire/response-head.js';
import { closedLoopNode, closedLoopWrk, type LoadResult, median } from './load.js';

const ROUNDS = 3;
const SECONDS = 3;
const here = fileURLToPath(new URL('.', import.meta.url));

function hasWrk(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function listen(server: ReturnType<typeof createServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return (server.address() as AddressInfo).port;
}

const backend = spawn(process.execPath, ['--import', 'tsx', join(here, 'backend.ts')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const backendPort = await new Promise<number>((resolve) => {
  backend.stdout.on('data', (c: Buffer) => {
    const m = /:(\d+)/.exec(c.toString());
    if (m !== null) resolve(Number(m[1]));
  });
});

const agent = new Agent({ keepAlive: true, maxSockets: 128, noDelay: true });
const viaNodeHttp = createServer((req, res) => {
  const up = request(
    { host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: req.headers, agent },
    (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    },
  );
  up.on('error', () => res.destroy());
  req.pipe(up);
});

const pool = new Pool(`http://127.0.0.1:${backendPort}`, { connections: 128 });
const viaUndici = createServer((req, res) => {
  const headers = { ...req.headers };
  delete headers.connection;
  pool.dispatch(
    { path: req.url ?? '/', method: 'GET', headers, body: null },
    {
      // Its presence selects undici's current handler interface.
      onRequestStart() {},
      onResponseStart(_c, status, h) {
        const out = { ...h };
        delete out.connection;
        delete out['keep-alive'];
        res.writeHead(status, out);
      },
      onResponseData(_c, chunk) {
        res.write(chunk);
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError() {
        res.destroy();
      },
    },
  );
});

const endpointPool = new EndpointPool('127.0.0.1', backendPort, `127.0.0.1:${backendPort}`, {
  maxConnections: 128,
  idleTimeoutMs: 4000,
  connectTimeoutMs: 10_000,
  sendTimeoutMs: 60_000,
});
const viaPortico = createServer((req, res) => {
  let head = `${req.method} ${req.url} HTTP/1.1\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'connection') head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  }
  const sink = {
    onUpstreamHead(status: number, { rawHeaders }: UpstreamHead) {
      const out: string[] = [];
      for (let i = 0; i < rawHeaders.length; i += 2) {
        const name = rawHeaders[i]!.toLowerCase();
        if (name !== 'connection' && name !== 'keep-alive') out.push(rawHeaders[i]!, rawHeaders[i + 1]!);
      }
      res.writeHead(status, out);
    },
    // The client's chunks are views of its read buffer: node:http may keep them, so copies go out.
    onUpstreamData(chunk: Buffer) {
      return res.write(Buffer.from(chunk));
    },
    onUpstreamEnd(last: Buffer | undefined) {
      res.end(last === undefined ? undefined : Buffer.from(last));
    },
    onUpstreamError() {
      res.destroy();
    },
  };
  endpointPool.send(new UpstreamExchange(`${head}\r\n`, null, false, false, sink));
});

const targets: [string, number][] = [
  ['node:http Agent', await listen(viaNodeHttp)],
  ['undici Pool', await listen(viaUndici)],
  ['Portico client', await listen(viaPortico)],
];
const measure = hasWrk() ? closedLoopWrk : closedLoopNode;
const results = new Map<string, LoadResult[]>(targets.map(([n]) => [n, []]));
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, port] of targets) results.get(name)!.push(await measure(port, 50, SECONDS));
  }
} finally {
  backend.kill('SIGTERM');
}
for (const [name, list] of results) {
  const rps = median(list.map((x) => x.requestsPerSecond));
  console.log(
    `${name.padEnd(16)} ${rps.toFixed(0).padStart(7)} req/s (median of ${ROUNDS} × ${SECONDS} s, 50 connections)`,
  );
}
viaNodeHttp.close();
viaUndici.close();
viaPortico.close();
endpointPool.destroy();
agent.destroy();
await pool.close();
// Both forwarders share this process with the load generator when wrk is absent; with wrk they run alone.
process.exit(0);

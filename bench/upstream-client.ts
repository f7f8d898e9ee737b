// `node --import tsx bench/upstream-client.ts`: why the proxy forwards with undici. Two minimal forwarders,
// node:http's keep-alive Agent and an undici Pool, in front of the same backend, measured in the same run
// (interleaved rounds, median reported). About 25 s.
import { execFileSync, spawn } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { closedLoopNode, closedLoopWrk, type LoadResult } from './load.js';

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

const targets: [string, number][] = [
  ['node:http Agent', await listen(viaNodeHttp)],
  ['undici Pool', await listen(viaUndici)],
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
  const rps = list.map((x) => x.requestsPerSecond).sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  console.log(
    `${name.padEnd(16)} ${rps.toFixed(0).padStart(7)} req/s (median of ${ROUNDS} × ${SECONDS} s, 50 connections)`,
  );
}
viaNodeHttp.close();
viaUndici.close();
agent.destroy();
await pool.close();
// Both forwarders share this process with the load generator when wrk is absent; with wrk they run alone.
process.exit(0);

// What stalled uploads make a proxy hold: N clients upload to a backend that reads nothing, over HTTP/1.1 or
// HTTP/2 with S streams per connection, and the proxy process's resident memory is read once the uploads stall.
// Peer in the same run: the same proxy with N connections that each completed one small request (what N clients
// cost without an upload). The difference per client is what an uploader pins. Runs the proxy on any Node.
// Run: npm run build && npm run bench:upload-memory [-- --clients 40 --protocol h2 --streams 16 --node PATH]
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as h2Connect } from 'node:http2';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fleet, forward, listener, route, upstream, vhost } from '../test/support/fleet.js';
import { freePort, until } from '../test/support/http.js';
import { PORTICO_MAIN } from '../test/support/portico.js';

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '40' },
    protocol: { type: 'string', default: 'h2' },
    streams: { type: 'string', default: '1' },
    node: { type: 'string', default: process.execPath },
    'settle-seconds': { type: 'string', default: '5' },
  },
});
const CLIENTS = Number(values.clients);
const STREAMS = Number(values.streams);
const SETTLE_MS = Number(values['settle-seconds']) * 1000;
const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 97);

/** Resident bytes of `pid` and its children (the supervisor and its worker). */
function residentBytes(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  return [String(pid), ...children].reduce((sum, p) => {
    try {
      const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1];
      return sum + Number(kib ?? 0) * 1024;
    } catch {
      return sum;
    }
  }, 0);
}

async function startProxy(backendPort: number, dir: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const file = join(dir, `fleet-${port}.json`);
  const config = fleet(
    [{ listener: listener(port), vhosts: [vhost(port, '*', [route(forward(['deaf'], { timeoutMs: 0 }))])] }],
    [upstream('deaf', [backendPort])],
    [],
  );
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(
    values.node,
    [PORTICO_MAIN, 'proxy', '--config-file', file, '--workers', '1', '--bind-address', '127.0.0.1'].concat([
      '--admin-address',
      'off',
      '--metrics-address',
      'off',
      '--ready-address',
      'off',
      '--drain-seconds',
      '0',
    ]),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  await until(() => stderr.includes('listening: '));
  return { child, port };
}

/** A client that uploads without end (the backend reads nothing, so it stalls at once). */
function upload(port: number, sockets: { destroy(): void }[]): void {
  if (values.protocol === 'h1') {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.write(`POST /up HTTP/1.1\r\nhost: example.com\r\ncontent-length: ${2 ** 40}\r\n\r\n`);
      const pump = (): void => {
        while (socket.write(CHUNK));
      };
      socket.on('drain', pump);
      pump();
    });
    socket.on('error', () => {});
    sockets.push(socket);
    return;
  }
  const session = h2Connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  for (let i = 0; i < STREAMS; i++) {
    const stream = session.request({ ':method': 'POST', ':path': '/up', ':authority': 'example.com' });
    stream.on('error', () => {});
    const pump = (): void => {
      while (!stream.destroyed && stream.write(CHUNK));
    };
    stream.on('drain', pump);
    pump();
  }
  sockets.push(session);
}

/** A client that opened its connection and stays idle. */
function idle(port: number, sockets: { destroy(): void }[]): void {
  if (values.protocol === 'h1') {
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    sockets.push(socket);
    return;
  }
  const session = h2Connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  sockets.push(session);
}

async function measure(kind: 'idle' | 'upload', backendPort: number, dir: string): Promise<number> {
  const { child, port } = await startProxy(backendPort, dir);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const before = residentBytes(child.pid!);
  const clients: { destroy(): void }[] = [];
  for (let i = 0; i < CLIENTS; i++) (kind === 'idle' ? idle : upload)(port, clients);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const after = residentBytes(child.pid!);
  for (const c of clients) c.destroy();
  child.kill('SIGKILL');
  return (after - before) / CLIENTS;
}

const held: Socket[] = [];
const deaf = createServer((socket) => {
  socket.on('error', () => {});
  socket.pause();
  held.push(socket);
});
await new Promise<void>((resolve) => deaf.listen({ host: '127.0.0.1', port: 0 }, resolve));
const backendPort = (deaf.address() as { port: number }).port;
const dir = mkdtempSync(join(tmpdir(), 'portico-upload-memory-'));
try {
  const idleBytes = await measure('idle', backendPort, dir);
  const uploadBytes = await measure('upload', backendPort, dir);
  const shape = values.protocol === 'h1' ? 'HTTP/1.1' : `HTTP/2, ${STREAMS} stream(s) per connection`;
  console.log(`proxy on ${values.node}, ${CLIENTS} clients, ${shape}, backend reading nothing`);
  console.log(`  resident per idle connection (peer):   ${(idleBytes / MiB).toFixed(2)} MiB`);
  console.log(`  resident per stalled uploader:         ${(uploadBytes / MiB).toFixed(2)} MiB`);
  console.log(
    `  ratio:                                 ${(uploadBytes / Math.max(idleBytes, 1)).toFixed(1)}x`,
  );
} finally {
  for (const socket of held) socket.destroy();
  deaf.close();
  rmSync(dir, { recursive: true, force: true });
}

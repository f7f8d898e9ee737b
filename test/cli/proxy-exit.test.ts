// A proxy stopped while a discovery connection attempt hangs (a SYN to a controller pod that just went away, which
// nobody answers) exits once it drained, not minutes later when the kernel gives the SYN up: on Kubernetes the pod
// would otherwise hold its termination grace period and be killed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { generateCertificates } from '../../src/certificates/certs.js';
import { startPortico, waitForOutput } from '../support/child.js';

/**
 * A loopback port whose SYNs go unanswered: a listener with a one-connection backlog in a stopped process, its
 * queue filled, so the kernel drops further SYNs. Returns the port and its cleanup.
 */
async function unansweredPort(): Promise<{ port: number; close(): void }> {
  const holder = spawn(
    process.execPath,
    [
      '-e',
      "require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, function () { console.log(this.address().port); })",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve) =>
    holder.stdout.setEncoding('utf8').once('data', (line: string) => resolve(Number(line.trim()))),
  );
  holder.kill('SIGSTOP');
  const fillers: Socket[] = [];
  for (let i = 0; i < 3; i++) fillers.push(connect(port, '127.0.0.1').on('error', () => {}));
  await new Promise((r) => setTimeout(r, 200));
  return {
    port,
    close() {
      for (const s of fillers) s.destroy();
      holder.kill('SIGKILL');
    },
  };
}

test('a proxy whose discovery connection attempt hangs exits promptly on SIGTERM once drained', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-proxy-exit-'));
  const blackhole = await unansweredPort();
  t.after(() => {
    blackhole.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const ca = join(dir, 'ca.crt');
  writeFileSync(ca, generateCertificates({ namespace: 'sys' }).caCertPem);
  const token = join(dir, 'token');
  writeFileSync(token, 'not-a-real-token');
  const child = startPortico([
    'proxy',
    ...['--discovery', `127.0.0.1:${blackhole.port}`, '--fleet', 'team/gw', '--node', 'n1'],
    ...['--ca-file', ca, '--token-file', token, '--server-name', 'portico-gateway.sys.svc'],
    ...['--admin-address', 'off', '--metrics-address', 'off', '--ready-address', 'off'],
    ...['--drain-seconds', '0'],
  ]);
  t.after(() => {
    child.process.kill('SIGKILL');
  });
  // The client gives the attempt up after 10 s and starts a new one on a new channel: the old socket still waits.
  await waitForOutput(child, /no connection within 10000 ms/);
  const stopped = Date.now();
  child.process.kill('SIGTERM');
  const code = await Promise.race([
    child.exited,
    new Promise<string>((r) => setTimeout(() => r('still running 5 s after SIGTERM'), 5000)),
  ]);
  assert.equal(code, 0, child.stderr());
  t.diagnostic(`exited ${Date.now() - stopped} ms after SIGTERM`);
});

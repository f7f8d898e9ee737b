import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

test('npm run cluster: starts in the foreground, writes a working kubeconfig, stops on SIGTERM', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-sim-main-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--kubeconfig', kubeconfig], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    child.stdout.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
        if (out.includes('kubeconfig:')) resolve();
      });
      child.on('exit', (code) => reject(new Error(`exited early with ${code}`)));
    });
    const config = parse(readFileSync(kubeconfig, 'utf8')) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { user: { token: string } }[];
    };
    const server = config.clusters[0]!.cluster.server;
    assert.match(out, new RegExp(`API server ${server.replace(/[.]/g, '\\.')}`));
    const ca = Buffer.from(config.clusters[0]!.cluster['certificate-authority-data'], 'base64').toString(
      'utf8',
    );
    const token = config.users[0]!.user.token;
    const { request } = await import('node:https');
    const status = await new Promise<number>((resolve, reject) => {
      request(`${server}/api/v1/namespaces`, { ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    assert.equal(status, 200);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

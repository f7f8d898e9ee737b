// A real Redis (Debian's redis-server) for the tests: its own process on a loopback port, its files in a temp
// dir, no persistence (a restart starts empty, as a Redis that lost its data does). Tests that need it skip with
// a clear message when redis-server is not installed (`apt-get install -y redis-server`).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REDIS_SERVER = '/usr/bin/redis-server';

/** Why tests needing Redis skip here, or undefined when redis-server runs. */
export function redisMissing(): string | undefined {
  try {
    execFileSync(REDIS_SERVER, ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return `${REDIS_SERVER} is not installed (apt-get install -y redis-server): skipping the Redis tests`;
  }
}

export interface RedisServer {
  port: number;
  /** Starts it (again) on its port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it; resolves once the process exited. */
  stop(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

/** A server certificate and key (PEM) it serves TLS with instead of plain TCP. */
export interface RedisTls {
  certPem: string;
  keyPem: string;
}

export function redisServer(port: number, password?: string, tls?: RedisTls): RedisServer {
  const dir = mkdtempSync(join(tmpdir(), 'portico-redis-'));
  let child: ChildProcess | undefined;
  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGTERM');
    await exited;
  };
  return {
    port,
    start() {
      const listen =
        tls === undefined
          ? ['--port', String(port)]
          : [
              '--port',
              '0',
              '--tls-port',
              String(port),
              '--tls-cert-file',
              join(dir, 'tls.crt'),
              '--tls-key-file',
              join(dir, 'tls.key'),
              '--tls-auth-clients',
              'no',
            ];
      if (tls !== undefined) {
        writeFileSync(join(dir, 'tls.crt'), tls.certPem);
        writeFileSync(join(dir, 'tls.key'), tls.keyPem, { mode: 0o600 });
      }
      const args = [...listen, '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'];
      if (password !== undefined) args.push('--requirepass', password);
      const started = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = started;
      return new Promise((resolve, reject) => {
        let out = '';
        started.stdout?.setEncoding('utf8').on('data', (text: string) => {
          out += text;
          if (out.includes('Ready to accept connections')) resolve();
        });
        started.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
      });
    },
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

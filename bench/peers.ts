// The programs the proxy benches measure against or with (nginx, wrk, h2load, valgrind, strace): installed from
// Debian with apt-get when missing, so a bench runs the same on a fresh machine; where that cannot be done (not
// root, no apt-get, `--install off`), the bench says which it skips.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { NGINX_STREAM_MODULE } from './nginx.js';
import { has } from './processes.js';

/** A command a bench uses and the Debian package that ships it; `file`: a file it needs instead of a command. */
interface Peer {
  command: string;
  debianPackage: string;
  file?: string;
}

export const NGINX: Peer = { command: 'nginx', debianPackage: 'nginx-light' };
export const WRK: Peer = { command: 'wrk', debianPackage: 'wrk' };
export const H2LOAD: Peer = { command: 'h2load', debianPackage: 'nghttp2-client' };
export const VALGRIND: Peer = { command: 'valgrind', debianPackage: 'valgrind' };
export const STRACE: Peer = { command: 'strace', debianPackage: 'strace' };
/** nginx's `stream` module, a dynamic module in Debian's nginx-light (`nginx -V`: --with-stream=dynamic). */
export const NGINX_STREAM: Peer = {
  command: 'nginx stream module',
  debianPackage: 'libnginx-mod-stream',
  file: NGINX_STREAM_MODULE,
};

function present(peer: Peer): boolean {
  return peer.file === undefined ? has(peer.command) : existsSync(peer.file);
}

let updated = false;

function apt(args: string[]): boolean {
  const run = spawnSync('apt-get', args, {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return run.status === 0;
}

/**
 * Installs the missing ones of `peers` (apt-get update first, once per run) unless `install` is false; returns
 * the commands that are there afterwards. Prints what it installed or why it could not.
 */
export function ensurePeers(peers: readonly Peer[], install = true): Set<string> {
  const missing = peers.filter((p) => !present(p));
  const packages = missing.map((p) => p.debianPackage);
  if (missing.length > 0) {
    const names = missing.map((p) => p.command).join(', ');
    if (!install) console.log(`not installed (--install off): ${names}`);
    else if (process.getuid?.() !== 0 || !has('apt-get'))
      console.log(
        `not installed, and this is not root with apt-get: ${names} (apt-get install ${packages.join(' ')})`,
      );
    else {
      console.log(`installing ${packages.join(', ')} from Debian (apt-get) for ${names}`);
      if (!updated) updated = apt(['update', '-q']);
      if (!apt(['install', '-y', '-q', '--no-install-recommends', ...packages]))
        console.log(`apt-get install ${packages.join(' ')} failed`);
    }
  }
  return new Set(peers.filter(present).map((p) => p.command));
}

/** The `--install on|off` flag's value: whether a bench may install its missing peers. */
export function installFlag(value: string | undefined): boolean {
  if (value === undefined || value === 'on') return true;
  if (value === 'off') return false;
  throw new Error(`--install: expected on or off, got ${JSON.stringify(value)}`);
}

// Loopback address blocks: each cluster takes a free /24 inside 127.<n>.0.0/16 and hands out addresses
// from it. A lock file per block in the temp dir keeps parallel test processes from sharing a block.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface AddressRange {
  base: string;
  allocate(): string;
  release(ip: string): void;
}

function lockPath(second: number, block: number): string {
  return join(tmpdir(), `portico-sim-127.${second}.${block}.lock`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Claims the block for this process; a lock left by a dead process is taken over. */
function claim(second: number, block: number): boolean {
  const path = lockPath(second, block);
  try {
    writeFileSync(path, String(process.pid), { flag: 'wx' });
    return true;
  } catch {
    const owner = Number(readFileSync(path, 'utf8'));
    if (Number.isInteger(owner) && owner > 0 && alive(owner)) return false;
    rmSync(path, { force: true });
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      return false;
    }
  }
}

/** `second` is the second octet: 20 for pods, 30 for services, 40 for load balancers. */
export function createAddressRange(second: number): AddressRange {
  const start = Math.floor(Math.random() * 256);
  let block = -1;
  for (let i = 0; i < 256 && block < 0; i++) {
    const candidate = (start + i) % 256;
    if (claim(second, candidate)) block = candidate;
  }
  if (block < 0) throw new Error(`no free address block in 127.${second}.0.0/16`);
  const used = new Set<number>();
  const base = `127.${second}.${block}`;
  return {
    base,
    allocate() {
      for (let host = 2; host < 255; host++) {
        if (used.has(host)) continue;
        used.add(host);
        return `${base}.${host}`;
      }
      throw new Error(`address range ${base}.0/24 is exhausted`);
    },
    release(ip) {
      if (ip.startsWith(`${base}.`)) used.delete(Number(ip.slice(base.length + 1)));
    },
  };
}

export function releaseRange(range: AddressRange): void {
  const [, second, block] = range.base.split('.');
  rmSync(lockPath(Number(second), Number(block)), { force: true });
}

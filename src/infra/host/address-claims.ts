// Host-wide claims on loopback addresses, so two standalone controllers (each with its own state directory)
// never hand the same address to their proxies. A claim is a file named after the address in a directory every
// controller on the host shares, created exclusively (O_EXCL), naming the state directory that owns it. A claim
// whose owner runs nothing any more (no live controller, no live proxy recorded on that address) is stale and
// may be taken over.
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PorticoError } from '../../platform/errors.js';

/** Shared by every user's controllers: sticky like /tmp, so no one removes another's claim. */
export const DEFAULT_CLAIMS_DIR = join(tmpdir(), 'portico-address-claims');

export interface AddressClaims {
  /** True when the address is now claimed by this state directory (new, already ours, or taken over stale). */
  claim(address: string, fleet: string): boolean;
  /** Gives up our claim on the address (someone else's is left alone). */
  release(address: string): void;
  /** Gives up every claim of this state directory. */
  releaseAll(): void;
  /** Another state directory's claim on the address, if one holds it. */
  holderOf(address: string): Claim | undefined;
}

export interface Claim {
  stateDir: string;
  fleet: string;
}

/** Whether the state directory owning a claim still runs something that may use the address. */
export type ClaimInUse = (ownerStateDir: string, address: string) => boolean;

export function openAddressClaims(dir: string, stateDir: string, inUse: ClaimInUse): AddressClaims {
  try {
    const created = mkdirSync(dir, { recursive: true });
    if (created !== undefined) chmodSync(dir, 0o1777);
  } catch (error) {
    throw new PorticoError('E_IO', `--address-claims-dir: cannot create ${dir}: ${(error as Error).message}`);
  }
  const file = (address: string) => join(dir, address);
  // Claims this process made or confirmed: no one takes a live claim, so they need no second look.
  const mine = new Set<string>();

  function read(address: string): Claim | undefined {
    try {
      const parsed = JSON.parse(readFileSync(file(address), 'utf8')) as Partial<Claim>;
      return typeof parsed.stateDir === 'string'
        ? { stateDir: parsed.stateDir, fleet: String(parsed.fleet) }
        : undefined;
    } catch {
      return undefined;
    }
  }

  function write(address: string, fleet: string, flag: 'wx' | 'w'): boolean {
    try {
      writeFileSync(file(address), `${JSON.stringify({ stateDir, fleet, pid: process.pid })}\n`, {
        flag,
        mode: 0o644,
      });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw new PorticoError('E_IO', `cannot claim ${address} in ${dir}: ${(error as Error).message}`);
    }
  }

  return {
    claim(address, fleet) {
      if (mine.has(address)) return true;
      for (let attempt = 0; attempt < 2; attempt++) {
        if (write(address, fleet, 'wx')) {
          mine.add(address);
          return true;
        }
        const owner = read(address);
        if (owner?.stateDir === stateDir) {
          if (owner.fleet !== fleet) write(address, fleet, 'w');
          mine.add(address);
          return true;
        }
        if (owner !== undefined && inUse(owner.stateDir, address)) return false;
        rmSync(file(address), { force: true }); // stale (or unreadable): take it over
      }
      return false;
    },
    release(address) {
      mine.delete(address);
      if (read(address)?.stateDir === stateDir) rmSync(file(address), { force: true });
    },
    holderOf(address) {
      const owner = read(address);
      return owner === undefined || owner.stateDir === stateDir ? undefined : owner;
    },
    releaseAll() {
      mine.clear();
      let entries: string[] = [];
      try {
        entries = readdirSync(dir);
      } catch {
        return;
      }
      for (const address of entries)
        if (read(address)?.stateDir === stateDir) rmSync(file(address), { force: true });
    },
  };
}

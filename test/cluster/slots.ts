// Which clusters run on this machine: one lock file per slot, naming the owning process and its directory.
// A slot whose owner died (kill -9 of a test run) is swept before reuse, so nothing it made outlives it long.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { isAlive } from '../../src/infra/host/process-identity.js';

const LOCK_DIR = '/run/portico-test-clusters';
export const MAX_SLOTS = 32;

export interface SlotOwner {
  pid: number;
  dir: string;
}

function lockPath(slot: number): string {
  return join(LOCK_DIR, `slot-${slot}.json`);
}

/**
 * Claims the first free slot. `sweep` tears down what a dead owner left; it runs before the slot is reused.
 * `occupied` tells a slot whose names or addresses something else on the machine uses: it is skipped.
 */
export async function claimSlot(
  dir: string,
  sweep: (slot: number, owner: SlotOwner) => Promise<void>,
  occupied: (slot: number) => boolean,
): Promise<number> {
  mkdirSync(LOCK_DIR, { recursive: true });
  for (let slot = 0; slot < MAX_SLOTS; slot++) {
    const path = lockPath(slot);
    if (existsSync(path)) {
      let owner: SlotOwner | undefined;
      try {
        owner = JSON.parse(readFileSync(path, 'utf8')) as SlotOwner;
      } catch {
        owner = undefined;
      }
      if (owner !== undefined && isAlive(owner.pid)) continue;
      if (owner !== undefined) await sweep(slot, owner);
      rmSync(path, { force: true });
    }
    if (occupied(slot)) continue;
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch {
      continue; // Another process took it between the check and the open.
    }
    writeSync(fd, JSON.stringify({ pid: process.pid, dir } satisfies SlotOwner));
    closeSync(fd);
    return slot;
  }
  throw new Error(`all ${MAX_SLOTS} cluster slots are in use (${LOCK_DIR})`);
}

/** Shared by the clusters of this machine: what must be restored once the last of them stops. */
export const HOST_BASELINE_FILE = join(LOCK_DIR, 'host-baseline.json');

/** Releases the slot; `lastOut` runs when no other cluster holds one. */
export function releaseSlot(slot: number, lastOut: () => void): void {
  rmSync(lockPath(slot), { force: true });
  const others = existsSync(LOCK_DIR) && readdirSync(LOCK_DIR).some((f) => f.startsWith('slot-'));
  if (others) return;
  lastOut();
  try {
    rmdirSync(LOCK_DIR);
  } catch {
    // Gone already, or another cluster just claimed a slot.
  }
}

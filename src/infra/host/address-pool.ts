// One loopback address per fleet from a CIDR pool, persisted so a fleet keeps its address across restarts.
//
// Policy: the network and broadcast addresses of the block are never handed out (for prefixes up to /30).
// A released address stays recorded with its release time and is handed out again only when no
// never-used address is left (oldest release first), so a Gateway removed and re-added soon gets its old
// address back, and a client still holding an old address rarely reaches an unrelated Gateway.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PorticoError } from '../../platform/errors.js';
import { writeFileAtomic } from '../../platform/write-file-atomic.js';
import type { AddressClaims } from './address-claims.js';

/** The default pool on Linux, where all of 127.0.0.0/8 is routed to the loopback interface. */
export const DEFAULT_ADDRESS_POOL = '127.0.1.0/24';
export const ADDRESS_STATE_FILE = 'addresses.json';

export interface AddressPoolOptions {
  /** IPv4 CIDR block, e.g. `127.0.1.0/24`. */
  cidr?: string;
  /** Directory holding `addresses.json`; absent: nothing is persisted (tests, dry runs). */
  stateDir?: string;
  /** The option or field the CIDR came from, named in errors. */
  source?: string;
  /** Told about a state file that could not be used (the pool then starts empty). */
  onWarning?: (message: string) => void;
  /** Clock for release times. */
  now?: () => Date;
  /** Host-wide claims: an address another controller claimed is never handed out (absent: no claims). */
  claims?: AddressClaims;
}

interface Assignment {
  address: string;
  /** Set while the fleet is gone; the address is then free but preferred last. */
  releasedAt?: string;
}

interface StateFile {
  cidr: string;
  fleets: Record<string, Assignment>;
}

export interface AddressPool {
  readonly cidr: string;
  /** The fleet's address: its current one, its previous one if still free, else a fresh one. */
  acquire(fleet: string): string;
  /** Frees the fleet's address (kept on record, see policy above). */
  release(fleet: string): void;
  /** Acquire every fleet in `fleets`, release every other one; returns fleet → address. */
  assign(fleets: Iterable<string>): Map<string, string>;
  /** The address currently held by the fleet. */
  get(fleet: string): string | undefined;
  /**
   * Gives the fleet `address`, which a running proxy of it already binds (adopted after a restart): what serves
   * wins over the record. Ignored for an address outside the block or held by another fleet.
   */
  hold(fleet: string, address: string): void;
  /**
   * Never hands out `address` again in this run (something else binds it); the fleet holding it is moved by
   * the next `assign`. Returns the fleet that held it.
   */
  avoid(address: string): string | undefined;
  /** Writes the state file if anything changed since the last save (atomically: temp file + rename). */
  save(): Promise<void>;
}

export interface Cidr {
  /** The network address as an unsigned 32-bit number. */
  base: number;
  prefix: number;
}

/** Parses an IPv4 CIDR; the error names `source` (the option or field it came from). */
export function parseCidr(text: string, source = 'address pool'): Cidr {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text.trim());
  const octets = match?.slice(1, 5).map(Number) ?? [];
  const prefix = Number(match?.[5]);
  if (match === null || octets.some((o) => o > 255) || prefix > 32) {
    throw new PorticoError('E_CONFIG', `${source}: '${text}' is not an IPv4 CIDR block like 127.0.1.0/24`);
  }
  const ip = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - prefix);
  const base = ip - (ip % size);
  if (base !== ip) {
    throw new PorticoError(
      'E_CONFIG',
      `${source}: '${text}' has host bits set; the block starts at ${formatIPv4(base)}/${prefix}`,
    );
  }
  return { base, prefix };
}

export function formatIPv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

/** The addresses of the block that may be handed out, lowest first. */
export function usableAddresses(cidr: Cidr): string[] {
  const size = 2 ** (32 - cidr.prefix);
  // /31 and /32 have no network or broadcast address to skip.
  const [first, last] = size <= 2 ? [0, size - 1] : [1, size - 2];
  const out: string[] = [];
  for (let i = first; i <= last; i++) out.push(formatIPv4(cidr.base + i));
  return out;
}

/** Opens the pool, reusing the assignments in `<stateDir>/addresses.json` that still fit the block. */
export async function openAddressPool(options: AddressPoolOptions = {}): Promise<AddressPool> {
  const cidrText = options.cidr ?? DEFAULT_ADDRESS_POOL;
  const source = options.source ?? 'address pool';
  const usable = usableAddresses(parseCidr(cidrText, source));
  const usableSet = new Set(usable);
  const now = options.now ?? (() => new Date());
  const file = options.stateDir === undefined ? undefined : join(options.stateDir, ADDRESS_STATE_FILE);
  const assignments = new Map<string, Assignment>();
  const avoided = new Set<string>();
  const claims = options.claims;
  // Entries the state file had but that do not fit (any more) are dropped: the file is then rewritten.
  let dirty = file !== undefined && (await loadAssignments(file, usableSet, assignments, options.onWarning));

  /** Free for `fleet`: not avoided, and claimed host-wide for it (no other controller's live claim). */
  function usableFor(address: string, fleet: string): boolean {
    return !avoided.has(address) && (claims?.claim(address, fleet) ?? true);
  }

  function acquire(fleet: string): string {
    const existing = assignments.get(fleet);
    // Its address stays its own unless another controller claimed it meanwhile (or it turned out in use).
    if (existing !== undefined && usableFor(existing.address, fleet)) {
      if (existing.releasedAt === undefined) return existing.address;
      assignments.set(fleet, { address: existing.address });
      dirty = true;
      return existing.address;
    }
    if (existing !== undefined) {
      options.onWarning?.(`${existing.address} is in use elsewhere on this host; fleet ${fleet} moves`);
      assignments.delete(fleet);
      dirty = true;
    }
    const address =
      takeFreeAddress(assignments, usable, (a) => usableFor(a, fleet)) ??
      exhausted(source, cidrText, usable.length);
    tellWhoHolds(address, fleet);
    const previous = holderOf(assignments, address);
    if (previous !== undefined) assignments.delete(previous);
    assignments.set(fleet, { address });
    dirty = true;
    return address;
  }

  /**
   * When another controller's proxies keep an address a fleet would have had (the first of the pool, which the
   * examples name), says so, naming them and how to stop them: a person curling that address reaches them.
   */
  function tellWhoHolds(address: string, fleet: string): void {
    const first = usable[0];
    if (first === undefined || first === address || assignments.has(holderOf(assignments, first) ?? ''))
      return;
    const holder = claims?.holderOf(first);
    if (holder === undefined) return;
    options.onWarning?.(
      `fleet ${fleet} is at ${address}: ${first} is held by fleet ${holder.fleet} of the standalone controller ` +
        `with --state-dir ${holder.stateDir}, whose proxies keep serving there ` +
        `(stop them: portico standalone --stop --state-dir ${holder.stateDir})`,
    );
  }

  function release(fleet: string): void {
    const existing = assignments.get(fleet);
    if (existing === undefined || existing.releasedAt !== undefined) return;
    assignments.set(fleet, { address: existing.address, releasedAt: now().toISOString() });
    claims?.release(existing.address);
    dirty = true;
  }

  return {
    cidr: cidrText,
    acquire,
    release,
    assign(fleets) {
      const wanted = new Set(fleets);
      for (const fleet of [...assignments.keys()]) if (!wanted.has(fleet)) release(fleet);
      // Fleets that already hold an address keep it before any new fleet may take a released one.
      const sorted = [...wanted].sort((a, b) => Number(assignments.has(b)) - Number(assignments.has(a)));
      return new Map(sorted.map((fleet) => [fleet, acquire(fleet)]));
    },
    avoid(address) {
      avoided.add(address);
      claims?.release(address);
      const holder = holderOf(assignments, address);
      if (holder !== undefined) {
        assignments.delete(holder);
        dirty = true;
      }
      return holder;
    },
    hold(fleet, address) {
      if (!usableSet.has(address) || !usableFor(address, fleet)) return;
      if (adopt(assignments, fleet, address)) dirty = true;
    },
    get(fleet) {
      const entry = assignments.get(fleet);
      return entry === undefined || entry.releasedAt !== undefined ? undefined : entry.address;
    },
    async save() {
      if (file === undefined || !dirty) return;
      await writeFileAtomic(file, stateFileText(cidrText, assignments));
      dirty = false;
    },
  };
}

function holderOf(assignments: ReadonlyMap<string, Assignment>, address: string): string | undefined {
  for (const [fleet, entry] of assignments) if (entry.address === address) return fleet;
  return undefined;
}

/**
 * Records `address` as the fleet's, taking it from a fleet that released it, never from one that holds it; true
 * when the record changed.
 */
function adopt(assignments: Map<string, Assignment>, fleet: string, address: string): boolean {
  const holder = holderOf(assignments, address);
  if (holder !== undefined && holder !== fleet && assignments.get(holder)?.releasedAt === undefined)
    return false;
  if (holder !== undefined && holder !== fleet) assignments.delete(holder);
  const current = assignments.get(fleet);
  if (current?.address === address && current.releasedAt === undefined) return false;
  assignments.set(fleet, { address });
  return true;
}

/**
 * Fills `assignments` from the state file with the entries that still fit the block; true when some did not (an
 * address outside a changed block, or one duplicated by hand editing): those are dropped rather than trusted.
 */
async function loadAssignments(
  file: string,
  usable: ReadonlySet<string>,
  assignments: Map<string, Assignment>,
  onWarning: ((message: string) => void) | undefined,
): Promise<boolean> {
  const stored = await readStateFile(file, onWarning);
  const taken = new Set<string>();
  let dropped = false;
  for (const [fleet, entry] of Object.entries(stored?.fleets ?? {})) {
    if (!usable.has(entry.address) || taken.has(entry.address)) {
      dropped = true;
      continue;
    }
    taken.add(entry.address);
    assignments.set(fleet, entry);
  }
  return dropped;
}

/**
 * An address for a fleet that holds none: a never-recorded one first, else the one released longest ago (whose
 * record is then dropped); undefined when every address is held or not `usable`.
 */
function takeFreeAddress(
  assignments: Map<string, Assignment>,
  addresses: readonly string[],
  usable: (address: string) => boolean,
): string | undefined {
  const recorded = new Set([...assignments.values()].map((e) => e.address));
  const fresh = addresses.find((a) => !recorded.has(a) && usable(a));
  if (fresh !== undefined) return fresh;
  const released = [...assignments].filter(([, e]) => e.releasedAt !== undefined);
  released.sort(([, a], [, b]) => ((a.releasedAt ?? '') < (b.releasedAt ?? '') ? -1 : 1));
  const oldest = released.find(([, e]) => usable(e.address));
  if (oldest === undefined) return undefined;
  assignments.delete(oldest[0]);
  return oldest[1].address;
}

/** The error when no address of the block is left for a fleet. */
function exhausted(source: string, cidr: string, size: number): never {
  throw new PorticoError(
    'E_CONFIG',
    `${source}: ${cidr} is exhausted: all ${size} addresses are in use by fleets ` +
      `(of this controller, or claimed by others on this host)`,
  );
}

/** The state file's text: assignments sorted by fleet, so it diffs well. */
function stateFileText(cidr: string, assignments: ReadonlyMap<string, Assignment>): string {
  const state: StateFile = {
    cidr,
    fleets: Object.fromEntries([...assignments].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
  };
  return `${JSON.stringify(state, null, 2)}\n`;
}

async function readStateFile(
  file: string,
  onWarning: ((message: string) => void) | undefined,
): Promise<StateFile | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PorticoError('E_IO', `${file}: cannot read the address assignments: ${String(error)}`, {
      cause: error,
    });
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isStateFile(parsed))
      throw new Error('expected {"cidr": string, "fleets": {fleet: {"address": ...}}}');
    return parsed;
  } catch (error) {
    onWarning?.(
      `${file}: ignoring unreadable address assignments (${(error as Error).message}); fleets get new addresses`,
    );
    return undefined;
  }
}

function isStateFile(value: unknown): value is StateFile {
  if (typeof value !== 'object' || value === null) return false;
  const fleets = (value as { fleets?: unknown }).fleets;
  if (typeof fleets !== 'object' || fleets === null) return false;
  return Object.values(fleets).every(
    (e: unknown) =>
      typeof e === 'object' &&
      e !== null &&
      typeof (e as Assignment).address === 'string' &&
      ['undefined', 'string'].includes(typeof (e as Assignment).releasedAt),
  );
}

// Counts of discovery connections not authorized yet, in all and per source address: a connection is admitted
// only while both are under their caps, so a few pods cannot fill the port and lock out restarting proxies.
import { isLoopbackHost } from '../platform/listen-scope.js';

export interface ConnectionCapsOptions {
  maxUnauthorizedConnections: number;
  /** From one source address at most (loopback excepted unless `capLoopbackSources`). */
  maxUnauthorizedPerAddress: number;
  capLoopbackSources: boolean;
}

export interface ConnectionCaps {
  /** Counts a new connection from `address`; false (nothing counted) when a cap is reached. */
  admit(address: string): boolean;
  /** The connection from `address` is authorized or gone: it no longer counts. */
  release(address: string): void;
  pending(): number;
  /** Whether the global bound is reached (a new connection is refused whatever its address). */
  full(): boolean;
  /** Whether `address` is below its own cap: room in all would admit it. */
  addressHasRoom(address: string): boolean;
}

export function createConnectionCaps(options: ConnectionCapsOptions): ConnectionCaps {
  let pending = 0;
  /** Source address → its connections not authorized yet. */
  const byAddress = new Map<string, number>();
  const addressHasRoom = (address: string): boolean =>
    (isLoopbackHost(address) && !options.capLoopbackSources) ||
    (byAddress.get(address) ?? 0) < options.maxUnauthorizedPerAddress;
  return {
    admit(address) {
      if (pending >= options.maxUnauthorizedConnections || !addressHasRoom(address)) return false;
      pending++;
      byAddress.set(address, (byAddress.get(address) ?? 0) + 1);
      return true;
    },
    addressHasRoom,
    release(address) {
      pending--;
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left > 0) byAddress.set(address, left);
      else byAddress.delete(address);
    },
    pending: () => pending,
    full: () => pending >= options.maxUnauthorizedConnections,
  };
}

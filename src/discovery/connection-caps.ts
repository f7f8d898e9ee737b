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
}

export function createConnectionCaps(options: ConnectionCapsOptions): ConnectionCaps {
  let pending = 0;
  /** Source address → its connections not authorized yet. */
  const byAddress = new Map<string, number>();
  return {
    admit(address) {
      const fromAddress = byAddress.get(address) ?? 0;
      const perAddressCap =
        isLoopbackHost(address) && !options.capLoopbackSources
          ? Number.POSITIVE_INFINITY
          : options.maxUnauthorizedPerAddress;
      if (pending >= options.maxUnauthorizedConnections || fromAddress >= perAddressCap) return false;
      pending++;
      byAddress.set(address, fromAddress + 1);
      return true;
    },
    release(address) {
      pending--;
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left > 0) byAddress.set(address, left);
      else byAddress.delete(address);
    },
    pending: () => pending,
  };
}

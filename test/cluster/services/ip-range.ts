// Loopback address blocks: each cluster takes a random /24 inside 127.<n>.0.0/16 so parallel test
// processes rarely collide, and hands out addresses from it.

export interface AddressRange {
  base: string;
  allocate(): string;
  release(ip: string): void;
}

const taken = new Set<string>();

/** `second` is the second octet: 20 for pods, 30 for services, 40 for load balancers. */
export function createAddressRange(second: number, third?: number): AddressRange {
  let block = third ?? Math.floor(Math.random() * 256);
  while (third === undefined && taken.has(`${second}.${block}`)) block = Math.floor(Math.random() * 256);
  taken.add(`${second}.${block}`);
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
  taken.delete(range.base.split('.').slice(1).join('.'));
}

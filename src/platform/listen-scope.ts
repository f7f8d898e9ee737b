// Listeners not meant for the world bind loopback; another address is refused unless the operator asked for it
// by name (an unauthenticated admin API on a public address is one typo away otherwise).
import { isIP } from 'node:net';
import { PorticoError } from './errors.js';
import type { HostPort } from './host-port.js';

/** 127.0.0.0/8, ::1 (and IPv4-mapped loopback), or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  const v4 = bare.startsWith('::ffff:') ? bare.slice('::ffff:'.length) : bare;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * Throws unless `address` is loopback or `allowed`; the message names the option and the flag that allows it.
 */
export function requireLoopback(
  address: HostPort,
  option: string,
  what: string,
  allowFlag: string,
  allowed: boolean,
): void {
  if (allowed || isLoopbackHost(address.host)) return;
  throw new PorticoError(
    'E_USAGE',
    `${option}: ${address.host} is not a loopback address; ${what}. Pass ${allowFlag} to listen there anyway`,
  );
}

// `HOST:PORT` option values (`127.0.0.1:18001`, `[::1]:18001`), parsed once with errors naming the option.
import { PorticoError } from './errors.js';

export interface HostPort {
  host: string;
  port: number;
}

export function parseHostPort(text: string, option: string): HostPort {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[3]);
  if (match === null || port > 65535) {
    throw new PorticoError('E_USAGE', `${option}: '${text}' is not HOST:PORT (e.g. 127.0.0.1:18001)`);
  }
  // `:19001` means every interface, as listen addresses usually do.
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/** The text form, brackets around IPv6 hosts. */
export function formatHostPort({ host, port }: HostPort): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

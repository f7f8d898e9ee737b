// `portico certgen --local DIR`: writes the discovery CA, server and client certificates as PEM files.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_CONTROLLER_NAMESPACE, generateCertificates } from '../discovery/certs.js';
import { PorticoError } from '../errors.js';

const HELP = `usage: portico certgen --local DIR [--namespace NS] [--extra-san NAME]... [--force]

Creates the certificates that secure config discovery between the controller and its proxies:
a CA, a server certificate for portico-gateway and a proxy client certificate.

options:
  --local DIR        write PEM files into DIR: ca.crt ca.key server.crt server.key client.crt client.key
                     (private keys mode 0600)
  --namespace NS     controller namespace for the server certificate names (default ${DEFAULT_CONTROLLER_NAMESPACE})
  --extra-san NAME   another server name (DNS name or IP address); repeatable
  --force            overwrite existing files
  -h, --help         show this help`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      local: { type: 'string' },
      namespace: { type: 'string', default: DEFAULT_CONTROLLER_NAMESPACE },
      'extra-san': { type: 'string', multiple: true, default: [] },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (values.local === undefined || values.local === '') {
    throw new PorticoError('E_USAGE', `certgen: --local DIR is required\n\n${HELP}`);
  }
  writeCertificateFiles(values.local, {
    namespace: values.namespace,
    extraSans: values['extra-san'],
    force: values.force,
  });
  console.log(
    `certgen: wrote ca.crt, ca.key, server.crt, server.key, client.crt, client.key to ${values.local}`,
  );
  return 0;
}

export const CERTIFICATE_FILES = {
  caCertPem: 'ca.crt',
  caKeyPem: 'ca.key',
  serverCertPem: 'server.crt',
  serverKeyPem: 'server.key',
  clientCertPem: 'client.crt',
  clientKeyPem: 'client.key',
} as const;

/** Generates and writes the six PEM files; refuses to overwrite unless `force`. */
export function writeCertificateFiles(
  dir: string,
  options: { namespace: string; extraSans: string[]; force: boolean },
): void {
  const existing = Object.values(CERTIFICATE_FILES).filter((f) => existsSync(join(dir, f)));
  if (existing.length > 0 && !options.force) {
    throw new PorticoError(
      'E_IO',
      `certgen: ${join(dir, existing[0]!)} already exists (use --force to replace the certificates)`,
    );
  }
  const certs = generateCertificates({ namespace: options.namespace, extraSans: options.extraSans });
  try {
    mkdirSync(dir, { recursive: true });
    for (const [key, file] of Object.entries(CERTIFICATE_FILES) as [
      keyof typeof CERTIFICATE_FILES,
      string,
    ][]) {
      const path = join(dir, file);
      const mode = file.endsWith('.key') ? 0o600 : 0o644;
      writeFileSync(path, certs[key], { mode });
      chmodSync(path, mode); // writeFileSync keeps the mode of a file that already existed
    }
  } catch (error) {
    throw new PorticoError('E_IO', `certgen: cannot write to ${dir}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

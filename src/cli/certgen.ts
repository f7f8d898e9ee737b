// `portico certgen --local DIR`: writes the discovery CA, server and client certificates as PEM files.
import { parseArgs } from 'node:util';
import { writeCertificateFiles } from '../discovery/certificate-files.js';
import { DEFAULT_CONTROLLER_NAMESPACE } from '../discovery/certs.js';
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

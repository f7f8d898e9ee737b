// `portico certgen`: the discovery CA, server and client certificates, as PEM files (--local) or Secrets.
import { parseArgs } from 'node:util';
import { writeCertificateFiles } from '../discovery/certificate-files.js';
import { DEFAULT_CONTROLLER_NAMESPACE } from '../discovery/certs.js';
import { PorticoError } from '../errors.js';

const HELP = `usage: portico certgen --local DIR [--namespace NS] [--extra-san NAME]... [--force]
       portico certgen --kubernetes [--namespace NS] [--kubeconfig PATH]

Creates the certificates that secure config discovery between the controller and its proxies:
a CA, a server certificate for portico-gateway and a proxy client certificate.

options:
  --local DIR        write PEM files into DIR: ca.crt ca.key server.crt server.key client.crt client.key
                     (private keys mode 0600)
  --kubernetes       create them as Secrets in the controller namespace, only those absent (idempotent):
                     portico-gateway-ca, portico-gateway-server-cert, portico-proxy-client-cert
  --kubeconfig PATH  with --kubernetes: use a kubeconfig instead of the pod's service account
  --namespace NS     controller namespace for the server certificate names (default: the pod's namespace
                     with --kubernetes, else ${DEFAULT_CONTROLLER_NAMESPACE})
  --extra-san NAME   another server name (DNS name or IP address); repeatable
  --force            overwrite existing files
  -h, --help         show this help`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      local: { type: 'string' },
      namespace: { type: 'string' },
      kubernetes: { type: 'boolean', default: false },
      kubeconfig: { type: 'string' },
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
  if (values.kubernetes) {
    const { createApiClient } = await import('../provider/kubernetes/api-client.js');
    const { ensureCertificateSecrets } = await import('../provider/kubernetes/certificate-secrets.js');
    const client = await createApiClient(values.kubeconfig);
    const namespace = values.namespace ?? client.namespace ?? DEFAULT_CONTROLLER_NAMESPACE;
    const created = await ensureCertificateSecrets(client, namespace);
    console.log(
      created.length === 0
        ? `certgen: the certificate Secrets in ${namespace} already exist`
        : `certgen: created Secrets ${created.join(', ')} in ${namespace}`,
    );
    return 0;
  }
  if (values.local === undefined || values.local === '') {
    throw new PorticoError('E_USAGE', `certgen: --local DIR is required\n\n${HELP}`);
  }
  writeCertificateFiles(values.local, {
    namespace: values.namespace ?? DEFAULT_CONTROLLER_NAMESPACE,
    extraSans: values['extra-san'],
    force: values.force,
  });
  console.log(
    `certgen: wrote ca.crt, ca.key, server.crt, server.key, client.crt, client.key to ${values.local}`,
  );
  return 0;
}

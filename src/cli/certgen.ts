// `portico certgen`: the discovery CA and server certificate, as PEM files (--local) or Secrets, and (--local)
// fleet client certificates. On a cluster the controller issues each fleet's client certificate itself.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CERTIFICATE_FILES,
  ensureFleetCertificate,
  writeCertificateFiles,
} from '../certificates/certificate-files.js';
import { DEFAULT_CONTROLLER_NAMESPACE } from '../certificates/certs.js';
import { PorticoError } from '../platform/errors.js';
import { createLogger, logSink } from '../platform/log-line.js';
import { LOG_FORMAT_HELP, LOG_LEVEL_HELP, logFormatOption, logLevelOption } from './log-level-option.js';

export const HELP = `usage: portico certgen --local DIR [--namespace NS] [--extra-san NAME]... [--force] [--fleet KEY]...
       portico certgen --kubernetes [--namespace NS] [--kubeconfig PATH] [--rotate]

Creates the certificates that secure config discovery between the controller and its proxies: a CA and a
server certificate for portico-gateway. Each fleet has its own client certificate, which names the fleet and
receives only that fleet's config: the controller issues them (in a cluster, a Secret per fleet; standalone,
files in its state directory), or --fleet does for a proxy run by hand.

options:
  --local DIR        write PEM files into DIR: ca.crt ca.key server.crt server.key (private keys mode 0600)
  --fleet KEY        with --local: also issue fleet KEY's client certificate from the CA in DIR (created when
                     absent) as fleets/<name>.crt and .key; repeatable. It lives 7 days: run again to renew
                     it (a certificate two thirds into its life is issued anew)
  --kubernetes       create them as Secrets in the controller namespace, only those absent (idempotent):
                     portico-gateway-ca, portico-gateway-server-cert
  --kubeconfig PATH  with --kubernetes: use a kubeconfig instead of the pod's service account
  --rotate           with --kubernetes: a new CA and server certificate even when valid ones exist (the
                     controller then re-issues every fleet's client certificate)
  --namespace NS     controller namespace for the server certificate names (default: the pod's namespace
                     with --kubernetes, else ${DEFAULT_CONTROLLER_NAMESPACE})
  --extra-san NAME   another server name (DNS name or IP address); repeatable
  --force            overwrite existing files
${LOG_LEVEL_HELP}
${LOG_FORMAT_HELP}
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
      fleet: { type: 'string', multiple: true, default: [] },
      force: { type: 'boolean', default: false },
      rotate: { type: 'boolean', default: false },
      'log-level': { type: 'string', default: 'info' },
      'log-format': { type: 'string', default: 'text' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  // In a cluster certgen runs as a Helm hook Job, whose output is a log like any other.
  const log = createLogger(
    logLevelOption(values['log-level']),
    logSink(logFormatOption(values['log-format'])),
  );
  if (values.kubernetes) {
    const { createApiClient } = await import('../provider/kubernetes/api-client.js');
    const { ensureCertificateSecrets } = await import('../provider/kubernetes/certificate-secrets.js');
    const client = await createApiClient(values.kubeconfig);
    const namespace = values.namespace ?? client.namespace ?? DEFAULT_CONTROLLER_NAMESPACE;
    const created = await ensureCertificateSecrets(client, namespace, { rotate: values.rotate });
    log.info(
      created.length === 0
        ? `certgen: the certificate Secrets in ${namespace} already exist`
        : `certgen: created Secrets ${created.join(', ')} in ${namespace}`,
    );
    return 0;
  }
  if (values.local === undefined || values.local === '') {
    throw new PorticoError('E_USAGE', `certgen: --local DIR is required\n\n${HELP}`);
  }
  const dir = values.local;
  // Fleet certificates alone reuse the CA already there; otherwise the CA and server files are (re)written.
  const reuseCa =
    values.fleet.length > 0 && !values.force && existsSync(join(dir, CERTIFICATE_FILES.caKeyPem));
  if (!reuseCa) {
    writeCertificateFiles(dir, {
      namespace: values.namespace ?? DEFAULT_CONTROLLER_NAMESPACE,
      extraSans: values['extra-san'],
      force: values.force,
    });
    log.info(`certgen: wrote ca.crt, ca.key, server.crt, server.key to ${dir}`);
  }
  for (const fleet of values.fleet) {
    const { files } = ensureFleetCertificate(dir, fleet);
    log.info(`certgen: fleet ${fleet}: ${files.cert}, ${files.key}`);
  }
  return 0;
}

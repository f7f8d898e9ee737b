// `portico cleanup`: what a controller made outside its release — its proxy fleets, certificate Secrets and
// leader Lease — deleted when it is uninstalled (the Helm chart's pre-delete hook runs it).
import { parseArgs } from 'node:util';
import { DEFAULT_CONTROLLER_NAME, DEFAULT_CONTROLLER_NAMESPACE } from '../api/controller-config.js';
import { CONTROLLER_SERVICE } from '../ir/well-known.js';
import { createLogger, logSink } from '../platform/log-line.js';
import { LOG_FORMAT_HELP, LOG_LEVEL_HELP, logFormatOption, logLevelOption } from './log-level-option.js';

export const HELP = `usage: portico cleanup [--namespace NS] [--controller-name NAME] [--fleet-namespaces own|all|A,B]
                       [--kubeconfig PATH]

Stops the controller of NS (its Deployment portico-gateway scaled to zero), then deletes the proxy fleets
(Deployments, DaemonSets, autoscalers, disruption budgets, Services, ServiceAccounts, CA ConfigMaps) it
created, its discovery certificate Secrets and its leader Lease. Gateways and routes are left alone; without a
controller nobody updates their status.

options:
  --namespace NS            the controller's namespace (default: the pod's namespace, else ${DEFAULT_CONTROLLER_NAMESPACE})
  --controller-name NAME    its controller name, which names its Lease (default ${DEFAULT_CONTROLLER_NAME})
  --fleet-namespaces WHERE  own (Controller Namespace Mode, default), all, or a comma-separated list
  --kubeconfig PATH         use a kubeconfig instead of the pod's service account
${LOG_LEVEL_HELP}
${LOG_FORMAT_HELP}
  -h, --help                show this help`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      namespace: { type: 'string' },
      'controller-name': { type: 'string', default: DEFAULT_CONTROLLER_NAME },
      'fleet-namespaces': { type: 'string', default: 'own' },
      kubeconfig: { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      'log-format': { type: 'string', default: 'text' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const log = createLogger(
    logLevelOption(values['log-level']),
    logSink(logFormatOption(values['log-format'])),
  );
  const { createApiClient } = await import('../provider/kubernetes/api-client.js');
  const { removeControllerObjects } = await import('../provider/kubernetes/cleanup.js');
  const client = await createApiClient(values.kubeconfig);
  const namespace = values.namespace ?? client.namespace ?? DEFAULT_CONTROLLER_NAMESPACE;
  const where = values['fleet-namespaces'];
  const fleetNamespaces =
    where === 'own' || where === 'all'
      ? where
      : where
          .split(',')
          .map((n) => n.trim())
          .filter((n) => n !== '');
  const deleted = await removeControllerObjects({
    client,
    namespace,
    controllerName: values['controller-name'],
    controllerDeployment: CONTROLLER_SERVICE,
    fleetNamespaces,
    log,
  });
  log.info(`cleanup: ${deleted} objects of the controller in ${namespace} deleted`);
  return 0;
}

// `portico controller`: the Gateway API controller on a Kubernetes cluster.
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { DEFAULT_CONTROLLER_NAMESPACE, parseControllerConfig } from '../api/controller-config.js';
import {
  DEFAULT_FLEET_CERTIFICATE_LIFETIME,
  type FleetCertificateLifetime,
  MIN_FLEET_CERTIFICATE_LIFETIME_MS,
  parseLifetime,
} from '../certificates/fleet-certificate-lifetime.js';
import { CONTROLLER_SERVICE, PORTS } from '../ir/well-known.js';
import { PorticoError } from '../platform/errors.js';
import { createLogger, logSink } from '../platform/log-line.js';
import { stopSignal } from '../platform/stop-signal.js';
import type { RateLimit } from '../platform/token-bucket.js';
import { createApiClient } from '../provider/kubernetes/api-client.js';
import { startKubernetesController } from '../provider/kubernetes/controller.js';
import { DEFAULT_STATUS_WRITE_RATE } from '../provider/kubernetes/write-rate.js';
import { appendStageTrace, type StageTrace, traceEventsFile } from '../trace/propagation-trace.js';
import { logFormatOption, logLevelOption } from './log-level-option.js';

// In a pod the controller's ports face the pod network; the NetworkPolicy and Service decide who reaches them.
const ANY = '0.0.0.0';

export const HELP = `usage: portico controller --config FILE [options]

Watches Gateway API resources on a Kubernetes cluster, creates the proxy fleets' infrastructure, writes
status, and serves the proxies their configuration.

options:
  --config FILE              PorticoGateway configuration (controller name, deploy type, watch)
  --kubeconfig PATH          use a kubeconfig instead of the pod's service account
  --namespace NS             controller namespace (default: the pod's namespace, else ${DEFAULT_CONTROLLER_NAMESPACE})
  --proxy-image IMAGE        image of the proxy Deployments (default: $PORTICO_PROXY_IMAGE)
  --proxy-image-pull-policy P  Always, IfNotPresent (default) or Never
  --proxy-image-pull-secrets A,B  image pull Secrets the proxy pods get (in their namespace)
  --log-level LEVEL          debug, info (default), warn or error
  --log-format FORMAT        text (default: time, level, message) or json (one object a line); the proxy
                             Deployments it makes log in the same format
  --discovery-service-port N port of the ${CONTROLLER_SERVICE} Service proxies dial (default ${PORTS.discovery})
  --discovery-address H:P    config discovery, gRPC over TLS (default ${ANY}:${PORTS.discovery})
  --health-address H:P       /healthz and /readyz; /dataplane only for loopback and the other replicas
                             (default ${ANY}:${PORTS.controllerHttp})
  --metrics-address H:P      Prometheus /metrics (default ${ANY}:${PORTS.metrics})
  --identity NAME            name in the leader lease (default: $POD_NAME, else the host name)
  --fleet-certificate-lifetime D  life of each fleet's discovery client certificate, e.g. 7d, 36h (default
                             7d; at least 1h); renewed two thirds in, the one it replaced accepted 5 more minutes
  --status-write-qps N       status writes to the API server per second at most (default ${DEFAULT_STATUS_WRITE_RATE.perSecond})
  --status-write-burst N     status writes at once after a quiet while (default ${DEFAULT_STATUS_WRITE_RATE.burst})
  -h, --help                 show this help

diagnostics:
  --trace-events FILE        append a timestamped line to FILE as each change is seen, translated and sent to
                             the proxies (default: $PORTICO_TRACE_EVENTS; absent: off)`;

function fleetCertificateLifetime(text: string): FleetCertificateLifetime {
  const lifetimeMs = parseLifetime(text);
  if (lifetimeMs === undefined || lifetimeMs < MIN_FLEET_CERTIFICATE_LIFETIME_MS) {
    throw new PorticoError(
      'E_USAGE',
      `--fleet-certificate-lifetime: '${text}' is not a duration of at least 1h (e.g. 7d, 36h)`,
    );
  }
  return { ...DEFAULT_FLEET_CERTIFICATE_LIFETIME, lifetimeMs };
}

/** `--status-write-qps` and `--status-write-burst`: a positive rate and a whole burst of at least 1. */
function statusWriteRate(qps: string, burst: string): RateLimit {
  const perSecond = Number(qps);
  if (qps.trim() === '' || !Number.isFinite(perSecond) || perSecond <= 0) {
    throw new PorticoError('E_USAGE', `--status-write-qps: '${qps}' is not a number above 0`);
  }
  const atOnce = Number(burst);
  if (!Number.isInteger(atOnce) || atOnce < 1) {
    throw new PorticoError('E_USAGE', `--status-write-burst: '${burst}' is not a whole number of at least 1`);
  }
  return { perSecond, burst: atOnce };
}

/** The diagnostics hook of `--trace-events` (or $PORTICO_TRACE_EVENTS). */
function traceOption(flag: string | undefined): { trace?: StageTrace } {
  const file = traceEventsFile(flag);
  return file === undefined ? {} : { trace: appendStageTrace(file) };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'proxy-image': { type: 'string' },
      'proxy-image-pull-policy': { type: 'string', default: 'IfNotPresent' },
      'proxy-image-pull-secrets': { type: 'string', default: '' },
      'discovery-service-port': { type: 'string', default: String(PORTS.discovery) },
      'log-level': { type: 'string', default: 'info' },
      'log-format': { type: 'string', default: 'text' },
      'discovery-address': { type: 'string', default: `${ANY}:${PORTS.discovery}` },
      'health-address': { type: 'string', default: `${ANY}:${PORTS.controllerHttp}` },
      'metrics-address': { type: 'string', default: `${ANY}:${PORTS.metrics}` },
      identity: { type: 'string' },
      'fleet-certificate-lifetime': { type: 'string', default: '7d' },
      'trace-events': { type: 'string' },
      'status-write-qps': { type: 'string', default: String(DEFAULT_STATUS_WRITE_RATE.perSecond) },
      'status-write-burst': { type: 'string', default: String(DEFAULT_STATUS_WRITE_RATE.burst) },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (values.config === undefined)
    throw new PorticoError('E_USAGE', `controller: --config FILE is required\n\n${HELP}`);
  let text: string;
  try {
    text = await readFile(values.config, 'utf8');
  } catch (error) {
    throw new PorticoError('E_IO', `--config: cannot read ${values.config}: ${(error as Error).message}`);
  }
  const config = parseControllerConfig(values.config, text);
  const proxyImage = values['proxy-image'] ?? process.env.PORTICO_PROXY_IMAGE;
  if (proxyImage === undefined || proxyImage === '') {
    throw new PorticoError('E_USAGE', 'controller: --proxy-image (or PORTICO_PROXY_IMAGE) is required');
  }
  const pullPolicy = values['proxy-image-pull-policy'];
  if (pullPolicy !== 'Always' && pullPolicy !== 'IfNotPresent' && pullPolicy !== 'Never') {
    throw new PorticoError(
      'E_USAGE',
      `--proxy-image-pull-policy: '${pullPolicy}' is not Always, IfNotPresent or Never`,
    );
  }
  const discoveryPort = Number(values['discovery-service-port']);
  if (!Number.isInteger(discoveryPort) || discoveryPort < 1 || discoveryPort > 65535) {
    throw new PorticoError(
      'E_USAGE',
      `--discovery-service-port: '${values['discovery-service-port']}' is not a port`,
    );
  }
  const logLevel = logLevelOption(values['log-level']);
  const logFormat = logFormatOption(values['log-format']);
  const pullSecrets = values['proxy-image-pull-secrets']
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const writeRate = statusWriteRate(values['status-write-qps'], values['status-write-burst']);
  const client = await createApiClient(values.kubeconfig);
  const log = createLogger(logLevel, logSink(logFormat));
  const controller = await startKubernetesController({
    config,
    client,
    controllerNamespace: values.namespace ?? client.namespace ?? DEFAULT_CONTROLLER_NAMESPACE,
    identity: values.identity ?? process.env.POD_NAME ?? hostname(),
    proxy: {
      image: proxyImage,
      imagePullPolicy: pullPolicy,
      imagePullSecrets: pullSecrets,
      discoveryPort,
      logFormat,
    },
    discoveryAddress: values['discovery-address'],
    healthAddress: values['health-address'],
    metricsAddress: values['metrics-address'],
    fleetCertificates: fleetCertificateLifetime(values['fleet-certificate-lifetime']),
    log,
    ...traceOption(values['trace-events']),
    statusWriteRate: writeRate,
  });
  log.info(`${await stopSignal()}: releasing leadership and stopping`);
  await controller.close();
  log.info('stopped');
  return 0;
}

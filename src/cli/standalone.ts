// `portico standalone`: the controller on one machine, from YAML files, with proxies as local processes.
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import {
  DEFAULT_CONTROLLER_NAMESPACE,
  defaultControllerConfig,
  type PorticoGatewayConfig,
  parseControllerConfig,
} from '../api/controller-config.js';
import { DEFAULT_CLAIMS_DIR } from '../infra/host/address-claims.js';
import { DEFAULT_ADDRESS_POOL } from '../infra/host/address-pool.js';
import { PORTS } from '../ir/well-known.js';
import { PorticoError } from '../platform/errors.js';
import { createLogger, logSink } from '../platform/log-line.js';
import { stopSignal } from '../platform/stop-signal.js';
import { DEFAULT_ADMIN_ADDRESS } from '../provider/standalone/admin-server.js';
import { DEFAULT_PROXY_WORKERS_MAX, startStandalone } from '../provider/standalone/controller.js';
import { stopStandalone } from '../provider/standalone/stop.js';
import { logFormatOption, logLevelOption } from './log-level-option.js';

export const DEFAULT_DISCOVERY_ADDRESS = `127.0.0.1:${PORTS.discovery}`;
export const DEFAULT_STATE_DIR = '.portico';

export const HELP = `usage: portico standalone -f PATH... [options]
       portico standalone --stop [--state-dir DIR]

Runs the controller on this machine: reads Gateway API resources from YAML files and directories, applies
every change to them at once, and runs one proxy process per fleet on its own loopback address.

Proxies outlive the controller: when it stops (SIGTERM, SIGINT) or dies, they keep serving their last config,
and the next controller on the same --state-dir adopts them (no connection is refused meanwhile). To stop
everything: --stop (or --stop-proxies-on-exit, to drain them whenever this controller stops).

options:
  -f, --file PATH              a resource file or directory (repeatable); also provider.standalone.paths
  --config FILE                a PorticoGateway configuration (controller name, paths)
  --state-dir DIR              certificates, address assignments, object metadata (default ${DEFAULT_STATE_DIR})
  --admin-address HOST:PORT    admin API read by 'portico get' (default ${DEFAULT_ADMIN_ADDRESS})
  --discovery-address H:P      config discovery for the proxies (default ${DEFAULT_DISCOVERY_ADDRESS})
  --allow-remote-admin         allow a non-loopback --admin-address (the admin API has no authentication)
  --allow-remote-discovery     allow a non-loopback --discovery-address (the proxies are local)
  --address-pool CIDR          loopback addresses for the fleets (default ${DEFAULT_ADDRESS_POOL})
  --address-claims-dir DIR     where controllers on this host claim addresses (default ${DEFAULT_CLAIMS_DIR})
  --controller-namespace NS    namespace of DataPlaneProxy parameters (default ${DEFAULT_CONTROLLER_NAMESPACE})
  --proxy-drain-seconds N      how long a stopping proxy keeps serving before it closes (default 5)
  --proxy-workers-max N        most worker processes per proxy (default ${DEFAULT_PROXY_WORKERS_MAX}): each gets its
                               DataPlaneProxy's spec.workers, else this machine's CPUs, up to N
  --stop-proxies-on-exit       on SIGTERM/SIGINT, drain and stop the proxies too
  --stop                       stop the controller using --state-dir and drain all its proxies, then exit
  --log-level LEVEL            the controller's own lines: debug, info (default), warn or error
  --log-format FORMAT          text (default: time, level, message) or json (one object a line); the proxies'
                               lines it relays, too
  -h, --help                   show this help

diagnostics:
  --trace-events FILE          append a timestamped line to FILE as each edit passes a stage (file event, read,
                               translated, sent; in the proxies: received, applied, swapped)`;

function workersMax(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1024)
    throw new PorticoError(
      'E_USAGE',
      `--proxy-workers-max: expected a whole number from 1 to 1024, got '${value}'`,
    );
  return n;
}

const OPTIONS = {
  file: { type: 'string', short: 'f', multiple: true, default: [] as string[] },
  config: { type: 'string' },
  'state-dir': { type: 'string', default: DEFAULT_STATE_DIR },
  'admin-address': { type: 'string', default: DEFAULT_ADMIN_ADDRESS },
  'discovery-address': { type: 'string', default: DEFAULT_DISCOVERY_ADDRESS },
  'allow-remote-admin': { type: 'boolean', default: false },
  'allow-remote-discovery': { type: 'boolean', default: false },
  'address-pool': { type: 'string', default: DEFAULT_ADDRESS_POOL },
  'proxy-workers-max': { type: 'string' },
  'address-claims-dir': { type: 'string', default: DEFAULT_CLAIMS_DIR },
  'controller-namespace': { type: 'string', default: DEFAULT_CONTROLLER_NAMESPACE },
  'proxy-drain-seconds': { type: 'string' },
  'stop-proxies-on-exit': { type: 'boolean', default: false },
  stop: { type: 'boolean', default: false },
  'trace-events': { type: 'string' },
  'log-level': { type: 'string', default: 'info' },
  'log-format': { type: 'string', default: 'text' },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

type StandaloneArgs = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true }>>['values'];

/** The configuration (default, or --config's) and every resource path, from -f and the configuration. */
async function configAndPaths(
  values: StandaloneArgs,
): Promise<{ config: PorticoGatewayConfig; paths: string[] }> {
  let config = defaultControllerConfig();
  const paths = values.file.map((p) => resolve(p));
  if (values.config !== undefined) {
    let text: string;
    try {
      text = await readFile(values.config, 'utf8');
    } catch (error) {
      throw new PorticoError('E_IO', `--config: cannot read ${values.config}: ${(error as Error).message}`);
    }
    config = parseControllerConfig(values.config, text);
    // Paths in a config file are relative to the file, as a person reading it expects.
    const base = dirname(resolve(values.config));
    paths.push(...config.provider.standalone.paths.map((p) => resolve(base, p)));
  }
  if (paths.length === 0) {
    throw new PorticoError(
      'E_USAGE',
      `standalone: no resources: give -f PATH or provider.standalone.paths\n\n${HELP}`,
    );
  }
  return { config, paths };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: OPTIONS, strict: true });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const stateDir = resolve(values['state-dir']);
  if (values.stop) {
    await stopStandalone({
      stateDir,
      claimsDir: values['address-claims-dir'],
      log: createLogger('info', logSink(logFormatOption(values['log-format']))),
    });
    return 0;
  }
  const level = logLevelOption(values['log-level']);
  const sink = logSink(logFormatOption(values['log-format']));
  const { config, paths } = await configAndPaths(values);
  const drain = values['proxy-drain-seconds'];
  const log = createLogger(level, sink);
  const controller = await startStandalone({
    config,
    paths,
    stateDir,
    adminAddress: values['admin-address'],
    discoveryAddress: values['discovery-address'],
    allowRemoteAdmin: values['allow-remote-admin'],
    allowRemoteDiscovery: values['allow-remote-discovery'],
    addressPool: values['address-pool'],
    addressClaimsDir: values['address-claims-dir'],
    controllerNamespace: values['controller-namespace'],
    proxyDrainSeconds: drain === undefined ? undefined : Number(drain),
    proxyWorkersMax: workersMax(values['proxy-workers-max']),
    // Absolute: the proxies append to it too, from their own working directory.
    traceEvents: values['trace-events'] === undefined ? undefined : resolve(values['trace-events']),
    log,
    // One host's own discovery server: only its trouble is worth a line, not each proxy connecting.
    discoveryLog: createLogger(level === 'debug' || level === 'info' ? 'warn' : level, sink),
  });
  const signal = await stopSignal();
  const stopProxies = values['stop-proxies-on-exit'];
  log.info(
    stopProxies
      ? `${signal}: draining proxies and stopping`
      : `${signal}: stopping; the proxies keep serving their last config ` +
          `(to stop them: portico standalone --stop --state-dir ${stateDir})`,
  );
  await controller.close({ stopProxies });
  log.info('stopped');
  return 0;
}

// `portico standalone`: the controller on one machine, from YAML files, with proxies as local processes.
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  DEFAULT_CONTROLLER_NAMESPACE,
  defaultControllerConfig,
  parseControllerConfig,
} from '../api/controller-config.js';
import { PorticoError } from '../errors.js';
import { DEFAULT_ADDRESS_POOL } from '../infra/host/address-pool.js';
import { DEFAULT_ADMIN_ADDRESS } from '../provider/standalone/admin-server.js';
import { startStandalone } from '../provider/standalone/controller.js';
import { stopSignal } from '../stop-signal.js';

export const DEFAULT_DISCOVERY_ADDRESS = '127.0.0.1:18000';
export const DEFAULT_STATE_DIR = '.portico';

const HELP = `usage: portico standalone -f PATH... [options]

Runs the controller on this machine: reads Gateway API resources from YAML files and directories, applies
every change to them at once, and runs one proxy process per fleet on its own loopback address.

options:
  -f, --file PATH              a resource file or directory (repeatable); also provider.standalone.paths
  --config FILE                a PorticoGateway configuration (controller name, paths)
  --state-dir DIR              certificates, address assignments, object metadata (default ${DEFAULT_STATE_DIR})
  --admin-address HOST:PORT    admin API read by 'portico get' (default ${DEFAULT_ADMIN_ADDRESS})
  --discovery-address H:P      config discovery for the proxies (default ${DEFAULT_DISCOVERY_ADDRESS})
  --address-pool CIDR          loopback addresses for the fleets (default ${DEFAULT_ADDRESS_POOL})
  --controller-namespace NS    namespace of DataPlaneProxy parameters (default ${DEFAULT_CONTROLLER_NAMESPACE})
  --proxy-drain-seconds N      how long a stopping proxy keeps serving before it closes (default 5)
  -h, --help                   show this help`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      file: { type: 'string', short: 'f', multiple: true, default: [] },
      config: { type: 'string' },
      'state-dir': { type: 'string', default: DEFAULT_STATE_DIR },
      'admin-address': { type: 'string', default: DEFAULT_ADMIN_ADDRESS },
      'discovery-address': { type: 'string', default: DEFAULT_DISCOVERY_ADDRESS },
      'address-pool': { type: 'string', default: DEFAULT_ADDRESS_POOL },
      'controller-namespace': { type: 'string', default: DEFAULT_CONTROLLER_NAMESPACE },
      'proxy-drain-seconds': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
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
  const drain = values['proxy-drain-seconds'];
  const log = (line: string): void => console.log(line);
  const controller = await startStandalone({
    config,
    paths,
    stateDir: resolve(values['state-dir']),
    adminAddress: values['admin-address'],
    discoveryAddress: values['discovery-address'],
    addressPool: values['address-pool'],
    controllerNamespace: values['controller-namespace'],
    proxyDrainSeconds: drain === undefined ? undefined : Number(drain),
    log,
  });
  log(`${await stopSignal()}: draining proxies and stopping`);
  await controller.close();
  log('stopped');
  return 0;
}

// A proxy serving one fleet config from a file (no discovery): for `portico proxy --config-file`, benchmarks
// and local experiments. SIGTERM drains gracefully, as in a cluster.
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import type { FleetConfig } from '../ir/fleet-config.js';
import { validateFleetConfig } from '../ir/validate.js';
import { PorticoError } from '../platform/errors.js';
import { discardingLogger } from '../platform/log-line.js';
import { drainOnSignal } from './signals.js';
import { createProxyWithWorkers, type WorkerProxyOptions } from './workers/pool.js';

/** Reads a fleet config from a JSON or YAML file; errors name the file. */
export async function loadFleetConfigFile(path: string): Promise<FleetConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new PorticoError('E_IO', `${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = parse(text);
  } catch (error) {
    throw new PorticoError('E_YAML_PARSE', `${path}: ${(error as Error).message}`);
  }
  try {
    return validateFleetConfig(value);
  } catch (error) {
    throw new PorticoError('E_FLEET_CONFIG', `${path}: ${(error as Error).message}`);
  }
}

/**
 * Serves the config in `configFile` until SIGTERM/SIGINT, then drains and resolves to exit code 0.
 * Listeners that cannot bind are logged and the rest serve, as with a config from discovery.
 */
export async function runStaticProxy(
  configFile: string,
  options: Partial<WorkerProxyOptions> = {},
): Promise<number> {
  const config = await loadFleetConfigFile(configFile);
  const log = options.log ?? discardingLogger;
  const proxy = createProxyWithWorkers({ workers: 1, ...options, log });
  await proxy.started;
  const outcome = await proxy.apply(config);
  if (!outcome.ok) throw new PorticoError('E_FLEET_CONFIG', `${configFile}: ${outcome.error}`);
  for (const a of proxy.addresses()) log.info(`listening: ${a.listener} on ${a.address}:${a.port}`);
  await drainOnSignal(proxy);
  return 0;
}

// `portico get config [FLEET]`: a fleet's configuration as the proxies hold it (the fleet config the discovery
// server serves: listeners, virtual hosts, routes, clusters, endpoints; secrets redacted), from the standalone
// controller's admin API, or with --proxy-admin from one proxy's own /config_dump (what it has applied; on
// Kubernetes reach it with `kubectl port-forward POD 19000`).
import { stringify } from 'yaml';
import { PorticoError } from '../platform/errors.js';
import { parseHostPort } from '../platform/host-port.js';
import type { FleetState } from '../provider/standalone/admin-state.js';

export interface ConfigRequest {
  fleet?: string;
  output?: string;
  adminAddress: string;
  proxyAdmin?: string;
}

async function readJson(url: string, unreachable: string): Promise<{ status: number; body: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new PorticoError('E_IO', unreachable, { cause: error });
  }
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    throw new PorticoError('E_IO', `${url} answered ${response.status} with something other than JSON`);
  }
}

function render(value: unknown, output: string | undefined): string {
  return output === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value);
}

/** The configs asked for, printed as YAML (default) or JSON. */
export async function getConfig(request: ConfigRequest): Promise<string> {
  if (request.output !== undefined && request.output !== 'yaml' && request.output !== 'json')
    throw new PorticoError('E_USAGE', `get config: --output must be yaml or json, not '${request.output}'`);
  if (request.proxyAdmin !== undefined) {
    parseHostPort(request.proxyAdmin, '--proxy-admin');
    const { status, body } = await readJson(
      `http://${request.proxyAdmin}/config_dump`,
      `no proxy admin API answers at ${request.proxyAdmin} (a proxy's --admin-address; default port 19000)`,
    );
    if (status === 404)
      throw new PorticoError('E_VALIDATION', `the proxy at ${request.proxyAdmin} has applied no config yet`);
    if (status !== 200)
      throw new PorticoError('E_IO', `the proxy at ${request.proxyAdmin} answered ${status}`);
    return render(body, request.output);
  }
  parseHostPort(request.adminAddress, '--admin-address');
  const query = request.fleet === undefined ? '' : `?fleet=${encodeURIComponent(request.fleet)}`;
  const { status, body } = await readJson(
    `http://${request.adminAddress}/api/fleets${query}`,
    `no standalone controller answers at ${request.adminAddress} (is 'portico standalone' running? otherwise ` +
      'pass its --admin-address, or --proxy-admin for one proxy)',
  );
  const items = (body as { items?: FleetState[] } | null)?.items;
  if (status !== 200 || !Array.isArray(items))
    throw new PorticoError(
      'E_IO',
      `the controller at ${request.adminAddress} answered ${status} without a fleet list`,
    );
  if (request.fleet !== undefined && items[0] === undefined)
    throw new PorticoError(
      'E_VALIDATION',
      `fleet "${request.fleet}" not found (fleets are named namespace/gateway, or the class name when merged)`,
    );
  const configs = items.map((f) => f.config ?? { fleet: f.fleet, config: null });
  return request.fleet !== undefined
    ? render(configs[0], request.output)
    : configs.map((c) => render(c, request.output)).join(request.output === 'json' ? '' : '---\n');
}

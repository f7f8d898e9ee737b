// `portico describe KIND NAME`: one object with everything that explains it — every condition of every parent
// and listener with reason and message, the routes attached to a Gateway or the parents of a route (and why
// there are none), the fleet and its proxies, file errors and recent condition changes — from the standalone
// controller on this machine or, with --kubeconfig, from a cluster.
import { parseArgs } from 'node:util';
import { PorticoError } from '../platform/errors.js';
import { DEFAULT_ADMIN_ADDRESS } from '../provider/standalone/admin-server.js';
import { describeResource } from './describe-render.js';
import { sourceOf } from './get.js';
import { RESOURCE_KINDS, resourceKind } from './resource-source.js';
import { usageError } from './usage.js';

export const HELP = `usage: portico describe gatewayclass|gateway|listenerset|httproute|grpcroute|tlsroute|tcproute|udproute|accesspolicy|clienttrafficpolicy|ratelimitpolicy NAME [options]

Shows one object in detail: its spec in short, every condition of the object, of each listener and of each
route parent with reason, age and message; a Gateway's routes and proxy fleet; a route's rules and parents
(and why it is attached nowhere, when it is); the problems among those conditions, file errors, and the most
recent condition changes. Kinds take kubectl's names too (gc, gtw, gateways, httproutes.gateway.networking.k8s.io).

options:
  -n, --namespace NS       the object's namespace (default: default; ignored for gatewayclasses)
      --admin-address A    the standalone controller's admin API (default: ${DEFAULT_ADMIN_ADDRESS})
      --kubeconfig FILE    describe from a Kubernetes cluster instead (the kubeconfig's current context)
  -h, --help               this text`;

export interface DescribeIo {
  stdout: (text: string) => void;
  now: () => number;
}

export function run(argv: string[]): Promise<number> {
  return runDescribe(argv, { stdout: (t) => process.stdout.write(t), now: Date.now });
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        namespace: { type: 'string', short: 'n' },
        'admin-address': { type: 'string' },
        kubeconfig: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw usageError('describe', HELP, error);
  }
}

export async function runDescribe(argv: string[], io: DescribeIo): Promise<number> {
  const { values, positionals } = parseOptions(argv);
  if (values.help === true) {
    io.stdout(`${HELP}\n`);
    return 0;
  }
  const [kindName, name, ...extra] = positionals;
  const kind = resourceKind(kindName);
  if (kind === undefined || name === undefined || extra.length > 0) {
    const what =
      kindName === undefined
        ? 'a kind and a name are required'
        : kind === undefined
          ? `unknown kind '${kindName}' (one of ${RESOURCE_KINDS.map((k) => k.kind.toLowerCase()).join(', ')})`
          : name === undefined
            ? `a ${kind.kind} name is required`
            : `unexpected argument '${extra[0]}'`;
    throw new PorticoError('E_USAGE', `describe: ${what}\n\n${HELP}`);
  }
  const namespace = kind.namespaced ? (values.namespace ?? 'default') : undefined;
  const source = await sourceOf(values);
  const [found] = await source.list(kind, namespace, name);
  if (found === undefined) {
    const where = namespace === undefined ? '' : ` in namespace ${namespace}`;
    throw new PorticoError('E_VALIDATION', `${kind.plural} "${name}" not found${where} (${source.where})`);
  }
  const byKind = (plural: string) => source.list(resourceKind(plural)!);
  const [gatewayClasses, gateways, routes, fleets] = await Promise.all([
    byKind('gatewayclasses'),
    byKind('gateways'),
    Promise.all(['httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes', 'udproutes'].map(byKind)).then(
      (lists) => lists.flat(),
    ),
    source.fleets().then(
      (views) => ({ views, error: undefined }),
      (error: unknown) => ({ views: [], error: (error as Error).message }),
    ),
  ]);
  io.stdout(
    describeResource(found, {
      gatewayClasses,
      gateways,
      routes,
      fleets: fleets.views,
      ...(fleets.error === undefined ? {} : { fleetError: fleets.error }),
      now: io.now(),
    }),
  );
  return 0;
}

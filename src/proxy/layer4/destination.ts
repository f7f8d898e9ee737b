// Where a layer-4 connection or datagram flow goes: the listener's VirtualHost (by SNI on a TLS listener, the
// one it has on TCP and UDP), its first route's weighted backends, a cluster of the listener's transport, and
// one of its endpoints. Decided once, when the connection or flow starts: a later config leaves it where it is.
import type { Endpoint, ListenerTls, TlsCertificateChoice } from '../../ir/fleet-config.js';
import type { Balancing } from '../routing/resolve.js';
import { type CompiledVirtualHost, type HostTable, lookupHost, pickBackend } from '../routing/route-table.js';
import { type ClusterState, pickEndpoint, type Snapshot } from '../routing/snapshot.js';
import type { ResponseFlag } from '../telemetry/access-log.js';

export type Destination =
  | { ok: true; routeName: string; cluster: ClusterState; endpoint: Endpoint }
  | { ok: false; routeName: string; flag: ResponseFlag; reason: string };

function refused(routeName: string, flag: ResponseFlag, reason: string): Destination {
  return { ok: false, routeName, flag, reason };
}

/** A TCP or UDP listener's one VirtualHost (`*` unless its Gateway listener names a hostname). */
function onlyHost(hosts: HostTable): CompiledVirtualHost | undefined {
  return hosts.any ?? hosts.exact.values().next().value ?? hosts.wildcards[0]?.vhost;
}

/**
 * The destination of a connection on `listenerName`; `serverName` is the SNI of a TLS listener's connection
 * (undefined: none sent, or a TCP or UDP listener).
 */
export function layer4Destination(
  rt: Balancing,
  snapshot: Snapshot | undefined,
  listenerName: string,
  serverName: string | undefined,
): Destination {
  const routes = snapshot?.listeners.get(listenerName);
  if (snapshot === undefined || routes === undefined) return refused('-', 'no_route', 'no such listener');
  const protocol = routes.listener.protocol;
  const vhost = protocol === 'TLS' ? lookupHost(routes.hosts, serverName ?? '') : onlyHost(routes.hosts);
  const route = vhost?.routes[0];
  if (route === undefined) return refused('-', 'no_route', `no route for server name '${serverName ?? ''}'`);
  const name = route.route.name;
  if (route.route.action.type !== 'Forward') return refused(name, 'no_backend', 'the route has no backend');
  const backend = pickBackend(route);
  if (backend?.cluster === undefined) return refused(name, 'no_backend', 'the backend is invalid');
  const cluster = snapshot.clusters.get(backend.cluster);
  const transport = protocol === 'UDP' ? 'udp' : 'tcp';
  if (cluster === undefined || cluster.protocol !== transport)
    return refused(name, 'no_backend', `cluster '${backend.cluster}' is not a ${transport} cluster`);
  const endpoint = pickEndpoint(cluster, rt.options.loadBalancing, rt.activeByEndpoint);
  if (endpoint === undefined)
    return refused(name, 'no_healthy_upstream', `cluster '${cluster.name}' has no endpoint`);
  return { ok: true, routeName: name, cluster, endpoint };
}

/**
 * The entry of a TLS listener's certificate list a server name falls under, as HTTPS chooses certificates: exact
 * hostname, else the longest matching wildcard (one or more labels), else `*`. Undefined: no Gateway listener of
 * the port serves that name, and the connection is refused.
 */
export function tlsChoiceFor(
  tls: ListenerTls,
  serverName: string | undefined,
): TlsCertificateChoice | undefined {
  const name = serverName ?? '';
  let wildcard: { choice: TlsCertificateChoice; length: number } | undefined;
  let any: TlsCertificateChoice | undefined;
  for (const choice of tls.certificates) {
    for (const raw of choice.hostnames) {
      const h = raw.toLowerCase();
      if (h === name && name !== '') return choice;
      if (h === '*') any ??= choice;
      else if (h.startsWith('*.')) {
        const suffix = h.slice(1);
        const longer = wildcard === undefined || suffix.length > wildcard.length;
        if (name.length > suffix.length && name.endsWith(suffix) && longer)
          wildcard = { choice, length: suffix.length };
      }
    }
  }
  return wildcard?.choice ?? any;
}

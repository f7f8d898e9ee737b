// Where `portico get` and `portico describe` read resources from: the standalone controller's admin API on this
// machine (the default), or a Kubernetes cluster through a kubeconfig (`--kubeconfig`), as egctl and kubectl
// do. Either gives the same objects (spec and status); each says what it knows of the proxy fleets.
import type { ResourceError } from '../api/common.js';
import { PorticoError } from '../platform/errors.js';
import { parseHostPort } from '../platform/host-port.js';
import type { ApiClient } from '../provider/kubernetes/api-client.js';
import type { FleetState, ResourceObject } from '../provider/standalone/admin-state.js';
import type { FleetView } from './fleet-view.js';
import { type KubernetesPod, type KubernetesWorkload, kubernetesFleetView } from './kubernetes-fleets.js';

export interface ResourceKind {
  kind: string;
  plural: string;
  namespaced: boolean;
  /** The API group/version its objects are served under. */
  apiVersion: string;
}

const GATEWAY_API = 'gateway.networking.k8s.io/v1';

export const RESOURCE_KINDS: readonly ResourceKind[] = [
  { kind: 'GatewayClass', plural: 'gatewayclasses', namespaced: false, apiVersion: GATEWAY_API },
  { kind: 'Gateway', plural: 'gateways', namespaced: true, apiVersion: GATEWAY_API },
  { kind: 'ListenerSet', plural: 'listenersets', namespaced: true, apiVersion: GATEWAY_API },
  { kind: 'HTTPRoute', plural: 'httproutes', namespaced: true, apiVersion: GATEWAY_API },
  { kind: 'GRPCRoute', plural: 'grpcroutes', namespaced: true, apiVersion: GATEWAY_API },
  { kind: 'TLSRoute', plural: 'tlsroutes', namespaced: true, apiVersion: GATEWAY_API },
  { kind: 'TCPRoute', plural: 'tcproutes', namespaced: true, apiVersion: GATEWAY_API },
  { kind: 'UDPRoute', plural: 'udproutes', namespaced: true, apiVersion: GATEWAY_API },
  {
    kind: 'AccessPolicy',
    plural: 'accesspolicies',
    namespaced: true,
    apiVersion: 'gateway.portico.io/v1alpha1',
  },
  {
    kind: 'ClientTrafficPolicy',
    plural: 'clienttrafficpolicies',
    namespaced: true,
    apiVersion: 'gateway.portico.io/v1alpha1',
  },
  {
    kind: 'RateLimitPolicy',
    plural: 'ratelimitpolicies',
    namespaced: true,
    apiVersion: 'gateway.portico.io/v1alpha1',
  },
];

/** Every name kubectl takes for these kinds: plural, singular, short name, and `plural.group`. */
export const KIND_ALIASES: Readonly<Record<string, string>> = Object.fromEntries(
  RESOURCE_KINDS.flatMap((k) => {
    const singular = k.kind.toLowerCase();
    const group = k.apiVersion.split('/')[0];
    const names = [k.plural, singular, `${k.plural}.${group}`, `${singular}.${group}`];
    if (k.kind === 'GatewayClass') names.push('gc');
    if (k.kind === 'Gateway') names.push('gtw');
    if (k.kind === 'ListenerSet') names.push('lset');
    if (k.kind === 'AccessPolicy') names.push('ap');
    if (k.kind === 'ClientTrafficPolicy') names.push('ctp');
    if (k.kind === 'RateLimitPolicy') names.push('rlp');
    return names.map((n) => [n, k.plural]);
  }),
);

/** The kind a name on the command line means (any of KIND_ALIASES, any case); undefined when none. */
export function resourceKind(name: string | undefined): ResourceKind | undefined {
  const plural = KIND_ALIASES[name?.toLowerCase() ?? ''];
  return RESOURCE_KINDS.find((k) => k.plural === plural);
}

/** Tells a watcher when to read again. */
export interface ChangeFeed {
  /** Resolves once objects may have changed since the last call, or at once when the watch is stopped. */
  next(): Promise<void>;
}

/** How often a watch asks the standalone admin API again: it has no watch stream. */
export const STANDALONE_POLL_MS = 500;

/** Waits `ms`, or less when `stop` aborts meanwhile. */
export function pause(ms: number, stop: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stop?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop?.addEventListener('abort', done, { once: true });
  });
}

export interface ResourceSource {
  /** Where the objects come from, for messages: "the standalone controller at …", "the cluster of …". */
  readonly where: string;
  list(kind: ResourceKind, namespace?: string, name?: string): Promise<ResourceObject[]>;
  /**
   * When objects of `kind` (in `namespace`, or all) may have changed: a cluster's watch stream says so; the
   * standalone admin API has none, so it is read again every STANDALONE_POLL_MS.
   */
  changes(kind: ResourceKind, namespace: string | undefined, stop: AbortSignal | undefined): ChangeFeed;
  fleets(): Promise<FleetView[]>;
  /** Problems in the resource files (standalone only; a cluster has none). */
  loadErrors(): Promise<ResourceError[]>;
}

async function fetchJson(url: string, where: string, unreachable: string): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new PorticoError('E_IO', unreachable, { cause: error });
  }
  const body = await response.text();
  if (!response.ok) throw new PorticoError('E_IO', `${where} answered ${response.status}: ${body.trim()}`);
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new PorticoError('E_IO', `${where} answered something other than a resource list (not JSON)`);
  }
}

function itemsOf(value: unknown, where: string): unknown[] {
  const items = (value as { items?: unknown } | null)?.items;
  if (!Array.isArray(items)) throw new PorticoError('E_IO', `${where} answered something other than a list`);
  return items;
}

/** The standalone controller's admin API (`portico standalone --admin-address`). */
export function standaloneSource(adminAddress: string): ResourceSource {
  parseHostPort(adminAddress, '--admin-address');
  const where = `the standalone controller at ${adminAddress}`;
  const unreachable =
    `no standalone controller answers at ${adminAddress} (is 'portico standalone' running? ` +
    `otherwise pass its --admin-address, or --kubeconfig for a cluster)`;
  const get = (path: string) => fetchJson(`http://${adminAddress}${path}`, where, unreachable);
  return {
    where,
    async list(kind, namespace, name) {
      const query = new URLSearchParams({ kind: kind.kind });
      if (namespace !== undefined) query.set('namespace', namespace);
      if (name !== undefined) query.set('name', name);
      return itemsOf(await get(`/api/resources?${query}`), where) as ResourceObject[];
    },
    async fleets() {
      return (itemsOf(await get('/api/fleets'), where) as FleetState[]).map(standaloneFleetView);
    },
    changes(_kind, _namespace, stop) {
      return { next: () => pause(STANDALONE_POLL_MS, stop) };
    },
    async loadErrors() {
      try {
        return itemsOf(await get('/api/errors'), where) as ResourceError[];
      } catch {
        return [];
      }
    },
  };
}

function standaloneFleetView(f: FleetState): FleetView {
  const details: [string, string][] = [];
  if (f.address !== undefined) details.push(['Address', f.address]);
  if (f.version !== undefined) details.push(['Config Version', f.version]);
  if (f.process !== undefined) {
    const p = f.process;
    const health = p.health === undefined ? '' : `, ${p.health}${p.healthError ? ` (${p.healthError})` : ''}`;
    const pid = p.pid === undefined ? '' : `pid ${p.pid}, `;
    details.push([
      'Process',
      `${pid}${p.state}${p.adopted === true ? ' (adopted)' : ''}, ${p.restarts} restarts${health}`,
    ]);
    if (p.lastExit !== undefined)
      details.push(['Last Exit', `${p.lastExit.code ?? p.lastExit.signal ?? '?'} at ${p.lastExit.at}`]);
  }
  const served = new Set((f.config?.gateways ?? []).map((g) => g.name));
  return {
    fleet: f.fleet,
    serves: (gateway, className) => f.fleet === gateway || f.fleet === className || served.has(gateway),
    details,
    proxies: {
      header: ['NODE', 'APPLIED', 'REJECTED', 'ERROR'],
      rows: f.nodes.map((n) => [n.node, n.appliedVersion ?? '', n.rejectedVersion ?? '', n.error ?? '']),
    },
  };
}

/** A cluster, through a kubeconfig: the Gateway API objects and the fleets' Deployments and DaemonSets. */
export async function kubernetesSource(kubeconfig: string): Promise<ResourceSource> {
  const { createApiClient, expectStatus } = await import('../provider/kubernetes/api-client.js');
  const client = await createApiClient(kubeconfig);
  const where = `the cluster of ${kubeconfig}`;
  const getList = async (path: string, what: string): Promise<unknown[]> => {
    let reply: Awaited<ReturnType<typeof client.request>>;
    try {
      reply = await client.request('GET', path);
    } catch (error) {
      throw new PorticoError('E_IO', `cannot reach ${where}: ${(error as Error).message}`, { cause: error });
    }
    const body = expectStatus(reply, `list ${what}`, [200]);
    return Array.isArray(body.items) ? body.items : [];
  };
  const collection = (kind: ResourceKind, namespace: string | undefined) => {
    const base = `/apis/${kind.apiVersion}`;
    return namespace === undefined
      ? `${base}/${kind.plural}`
      : `${base}/namespaces/${namespace}/${kind.plural}`;
  };
  return {
    where,
    changes(kind, namespace, stop) {
      return watchFeed(client, collection(kind, namespace), stop);
    },
    async list(kind, namespace, name) {
      const path = collection(kind, namespace);
      const items = (await getList(path, kind.plural)) as ResourceObject[];
      return items
        .map((item) => ({ ...item, apiVersion: item.apiVersion ?? kind.apiVersion, kind: kind.kind }))
        .filter((item) => name === undefined || item.metadata.name === name);
    },
    async fleets() {
      const selector = encodeURIComponent('app.kubernetes.io/managed-by=portico-gateway');
      const workloads = [
        ...(
          (await getList(
            `/apis/apps/v1/deployments?labelSelector=${selector}`,
            'deployments',
          )) as KubernetesWorkload[]
        ).map((w) => ({ ...w, kind: 'Deployment' })),
        ...(
          (await getList(
            `/apis/apps/v1/daemonsets?labelSelector=${selector}`,
            'daemonsets',
          )) as KubernetesWorkload[]
        ).map((w) => ({ ...w, kind: 'DaemonSet' })),
      ];
      // Pods say why a fleet does not serve (unschedulable, crash-looping); a kubeconfig may not read them.
      const pods = (await getList(`/api/v1/pods?labelSelector=${selector}`, 'pods').catch(() => undefined)) as
        | KubernetesPod[]
        | undefined;
      return workloads.map((w) => kubernetesFleetView(w, pods));
    },
    async loadErrors() {
      return [];
    },
  };
}

/** After a watch stream fails (the API server restarting, say), how long before it is opened again. */
const REWATCH_DELAY_MS = 1000;

/**
 * The API server's watch on `path`, from the resourceVersion of a fresh list, opened again whenever it ends
 * (the server closes watches after a while; a 410 for a too-old version starts over from a new list). Every
 * event but a bookmark wakes the watcher, and so does every fresh list, which may hold a change no event will
 * report.
 */
export function watchFeed(client: ApiClient, path: string, stop: AbortSignal | undefined): ChangeFeed {
  let changed = false;
  let wake: () => void = () => {};
  const signal = () => {
    changed = true;
    wake();
  };
  void (async () => {
    while (!(stop?.aborted ?? false)) {
      try {
        const listed = await client.request('GET', path);
        const version = (listed.body.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
        // What changed between the watcher's own list and this one (or while the last stream was down) sends no
        // event: read again once now, and the stream covers everything after this version.
        signal();
        const query = `watch=1${version === undefined ? '' : `&resourceVersion=${encodeURIComponent(version)}`}`;
        const handle = client.watch(`${path}?${query}`, (event) => {
          if (event.type !== 'BOOKMARK') signal();
        });
        const onStop = () => handle.stop();
        stop?.addEventListener('abort', onStop, { once: true });
        await handle.done.finally(() => stop?.removeEventListener('abort', onStop));
      } catch {
        await pause(REWATCH_DELAY_MS, stop);
      }
    }
  })();
  return {
    next: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          changed = false;
          stop?.removeEventListener('abort', done);
          resolve();
        };
        if (changed || (stop?.aborted ?? false)) {
          done();
          return;
        }
        wake = done;
        stop?.addEventListener('abort', done, { once: true });
      }),
  };
}

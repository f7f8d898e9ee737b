// The Kubernetes controller: informers → translator → discovery server (every replica), and, on the leader
// only, infrastructure (server-side apply) and status writes.
import { performance } from 'node:perf_hooks';
import type { PorticoGatewayConfig } from '../../api/controller-config.js';
import { createDiscoveryServer, type DiscoveryServer } from '../../discovery/server.js';
import type { ProxyRuntime } from '../../infra/kubernetes/render.js';
import type { FleetConfig } from '../../ir/fleet-config.js';
import type { Logger } from '../../log-line.js';
import {
  createTranslateCache,
  type FleetInfra,
  type GatewayAddress,
  type ObjectStatus,
  translate,
} from '../../translate/index.js';
import { dataPlaneState } from '../data-plane-state.js';
import { createReconcileLoop } from '../reconcile-loop.js';
import type { ApiClient, JsonObject } from './api-client.js';
import { waitForCertificateAuthority, waitForServerTls } from './certificate-secrets.js';
import { dataPlaneRoute, peerCredential } from './data-plane-access.js';
import { createFleetClientSecrets } from './fleet-client-secrets.js';
import { type Endpoint, serveHttp } from './http-endpoints.js';
import { createInfraApplier, type InfraApplier } from './infra-applier.js';
import { type LeaderElection, leaseName, startLeaderElection } from './leader-election.js';
import { createMetrics, formatMetrics } from './metrics.js';
import {
  createPeerDataPlane,
  DATA_PLANE_PATH,
  type DataPlaneReport,
  replicaAddresses,
} from './peer-data-plane.js';
import { nodesOnReadyPods } from './ready-proxies.js';
import { withRecordedProgrammed } from './recorded-programmed.js';
import { createResourceWatch } from './resource-watch.js';
import { createStatusWriter } from './status-writer.js';
import { tokenAuth } from './token-auth.js';

export interface KubernetesControllerOptions {
  config: PorticoGatewayConfig;
  client: ApiClient;
  controllerNamespace: string;
  /** This replica's name in the leader lease (the pod name). */
  identity: string;
  /** The proxies' image and how they reach discovery. */
  proxy: ProxyRuntime;
  discoveryAddress: string;
  healthAddress: string;
  metricsAddress: string;
  log: Logger;
  leaseDurationSeconds?: number;
  leaseRetryMs?: number;
  /** How long after taking the lease a stored Programmed=True stands in for proxies still reconnecting. */
  reconnectGraceMs?: number;
}

export interface KubernetesController {
  discoveryPort: number;
  healthAddress: string;
  metricsAddress: string;
  close(): Promise<void>;
}

const RETRY_AFTER_ERROR_MS = 2000;
// Six of the discovery client's 10 s backoff caps: every proxy that is alive has reconnected by then.
const DEFAULT_RECONNECT_GRACE_MS = 60_000;

function addressesOfService(service: JsonObject | undefined): GatewayAddress[] {
  const labels = ((service?.metadata as JsonObject | undefined)?.labels ?? {}) as Record<string, string>;
  if (labels['app.kubernetes.io/managed-by'] !== 'portico-gateway') return [];
  const ingress = (((service?.status as JsonObject | undefined)?.loadBalancer as JsonObject | undefined)
    ?.ingress ?? []) as { ip?: string; hostname?: string }[];
  return ingress.flatMap((i): GatewayAddress[] =>
    i.ip !== undefined
      ? [{ type: 'IPAddress', value: i.ip }]
      : i.hostname !== undefined
        ? [{ type: 'Hostname', value: i.hostname }]
        : [],
  );
}

/** Infrastructure Portico could not create: the fleet's Gateways say so instead of waiting forever. */
function withInfraProblem(s: ObjectStatus, problem: string | undefined): ObjectStatus {
  if (problem === undefined || s.kind !== 'Gateway') return s;
  const conditions = ((s.status.conditions ?? []) as JsonObject[]).map((c) =>
    c.type === 'Programmed' ? { ...c, status: 'False', reason: 'Invalid', message: problem } : c,
  );
  return { ...s, status: { ...s.status, conditions } };
}

export async function startKubernetesController(
  options: KubernetesControllerOptions,
): Promise<KubernetesController> {
  const { client, config, log, controllerNamespace } = options;
  const controllerName = config.gateway.controllerName;
  const deployType = config.provider.kubernetes.deploy.type;
  const metrics = createMetrics();
  let ready = false;
  let closed = false;

  // Assigned once discovery exists; until then this replica has no proxies to report.
  let ownNodes: () => DataPlaneReport['nodes'] = () => [];
  let serverKeyPem: string | undefined;
  const health = await serveHttp(options.healthAddress, '--health-address', {
    '/healthz': () => ({ status: 200, body: 'ok\n' }),
    '/readyz': () => (ready ? { status: 200, body: 'ready\n' } : { status: 503, body: 'starting\n' }),
    [DATA_PLANE_PATH]: dataPlaneRoute(
      () => ({ identity: options.identity, nodes: ownNodes() }),
      () => serverKeyPem,
    ),
  });
  const metricsEndpoint: Endpoint = await serveHttp(options.metricsAddress, '--metrics-address', {
    '/metrics': () => ({ status: 200, body: formatMetrics(metrics), type: 'text/plain; version=0.0.4' }),
  });

  const tls = await waitForServerTls(client, controllerNamespace, log.warn);
  serverKeyPem = tls.keyPem;
  let infraByFleet = new Map<string, FleetInfra>();
  const discovery: DiscoveryServer = createDiscoveryServer({
    address: options.discoveryAddress,
    tls,
    auth:
      deployType === 'GatewayNamespace'
        ? tokenAuth({
            client,
            controllerNamespace,
            fleetAccount: (fleet) => {
              const infra = infraByFleet.get(fleet);
              return infra === undefined ? undefined : { namespace: infra.namespace, name: infra.name };
            },
          })
        : { mode: 'mtls' },
    log: (level, message) => log[level](`discovery: ${message}`),
  });
  const { port: discoveryPort } = await discovery.start();
  ownNodes = () => discovery.nodes();

  const resources = createResourceWatch({
    client,
    config,
    controllerNamespace,
    onChange: () => loop.soon(),
    log: log.warn,
  });
  // Controller Namespace Mode: the controller signs each fleet's own client certificate with the CA.
  const fleetSecrets =
    deployType === 'ControllerNamespace'
      ? createFleetClientSecrets({
          client,
          ca: await waitForCertificateAuthority(client, controllerNamespace, log.warn),
          log: log.info,
        })
      : undefined;
  const infra: InfraApplier = createInfraApplier({
    client,
    proxy: options.proxy,
    controllerNamespace,
    deployType,
    caPem: tls.caPem,
    fleetSecrets,
    log: log.info,
  });
  const statusWriter = createStatusWriter({
    client,
    controllerName,
    log: log.warn,
    onWrite: () => {
      metrics.statusWrites++;
    },
  });
  const cache = createTranslateCache();
  let fleets: FleetConfig[] = [];
  const served = new Map<string, FleetConfig>();
  let leader: LeaderElection | undefined;
  const reconnectGraceMs = options.reconnectGraceMs ?? DEFAULT_RECONNECT_GRACE_MS;
  // Until this passes after taking the lease, the stored Programmed verdicts hold; afterwards only live Acks count.
  let graceEndsAt = 0;
  let graceTimer: NodeJS.Timeout | undefined;
  const peers = createPeerDataPlane({
    identity: options.identity,
    peers: () => replicaAddresses(resources.snapshot(), controllerNamespace),
    onChange: () => loop.soon(),
    log: log.warn,
    credential: () => peerCredential(tls.keyPem),
  });

  async function pass(): Promise<void> {
    if (closed) return;
    const snapshot = resources.snapshot();
    const started = performance.now();
    // Proxies Ack to whichever replica they are connected to: count the peers' too (polled while leading),
    // and, while they reconnect after a restart or takeover, what the stored status records as Programmed.
    const fleetService = (fleet: string) => {
      const i = infraByFleet.get(fleet);
      return i === undefined ? undefined : `${i.namespace}/${i.name}`;
    };
    // Only proxies whose pods are ready endpoints count: the Service sends traffic to no other.
    const nodes = nodesOnReadyPods(
      [...discovery.nodes(), ...peers.nodes()],
      fleetService,
      snapshot.endpointSlices,
    );
    const live = dataPlaneState(fleets, nodes, (fleet) => {
      const service = fleetService(fleet);
      return service === undefined ? [] : addressesOfService(resources.raw('Service', service));
    });
    const dataPlane =
      performance.now() < graceEndsAt
        ? withRecordedProgrammed(live, fleets, (key) => resources.raw('Gateway', key))
        : live;
    const result = translate(snapshot, { controllerName, controllerNamespace, deployType, cache }, dataPlane);
    const seconds = (performance.now() - started) / 1000;
    metrics.translateSecondsSum += seconds;
    metrics.reconciles++;
    log.debug(
      `reconcile ${metrics.reconciles}: ${result.fleets.length} fleets, ${result.statuses.length} statuses in ${(seconds * 1000).toFixed(1)} ms`,
    );

    infraByFleet = new Map(result.infra.map((i) => [i.fleet, i]));
    const gone = new Set(served.keys());
    for (const fleet of result.fleets) {
      gone.delete(fleet.fleet);
      // The translator keeps an unchanged fleet's config object: nothing to diff or send for it.
      if (served.get(fleet.fleet) === fleet) continue;
      discovery.setFleet(fleet);
      served.set(fleet.fleet, fleet);
      metrics.configVersions.set(fleet.fleet, (metrics.configVersions.get(fleet.fleet) ?? 0) + 1);
    }
    for (const fleet of gone) {
      discovery.removeFleet(fleet);
      served.delete(fleet);
      metrics.configVersions.delete(fleet);
    }
    fleets = result.fleets;
    metrics.connectedProxies = discovery.nodes().length;
    ready = true;

    if (leader?.isLeader() !== true) return;
    const problems = await infra.sync(result.infra);
    const gatewayFleet = new Map<string, string>();
    for (const i of result.infra) for (const g of i.gateways) gatewayFleet.set(g, i.fleet);
    for (const s of result.statuses) {
      if (closed || leader?.isLeader() !== true) return;
      const key = s.namespace === undefined ? s.name : `${s.namespace}/${s.name}`;
      const fleet = gatewayFleet.get(key);
      const status = withInfraProblem(s, fleet === undefined ? undefined : problems.get(fleet));
      await statusWriter.write(status, resources.raw(s.kind, key));
    }
  }

  let retryTimer: NodeJS.Timeout | undefined;
  const loop = createReconcileLoop(pass, (error) => {
    metrics.reconcileErrors++;
    log.error(`reconcile failed, retrying: ${(error as Error).message}`);
    if (retryTimer === undefined && !closed) {
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        loop.soon();
      }, RETRY_AFTER_ERROR_MS);
    }
  });
  discovery.on('change', loop.soon);

  await resources.start();
  log.info(`controller ${controllerName}: watching, discovery on port ${discoveryPort}`);
  await loop.now();
  leader = startLeaderElection({
    client,
    namespace: controllerNamespace,
    name: leaseName(controllerName),
    identity: options.identity,
    leaseDurationSeconds: options.leaseDurationSeconds,
    retryMs: options.leaseRetryMs,
    log: log.info,
    onChange: (leading) => {
      metrics.leader = leading;
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      graceTimer = undefined;
      if (leading) {
        infra.reset();
        peers.start();
        graceEndsAt = performance.now() + reconnectGraceMs;
        // One more pass when the grace ends, so a fleet with no live proxy loses Programmed then.
        graceTimer = setTimeout(() => {
          graceTimer = undefined;
          loop.soon();
        }, reconnectGraceMs);
      } else peers.stop();
      loop.soon();
    },
  });

  return {
    discoveryPort,
    healthAddress: health.address,
    metricsAddress: metricsEndpoint.address,
    async close() {
      closed = true;
      loop.stop();
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      discovery.off('change', loop.soon);
      await leader?.stop();
      peers.stop();
      resources.stop();
      await Promise.all([discovery.close(), health.close(), metricsEndpoint.close()]);
    },
  };
}

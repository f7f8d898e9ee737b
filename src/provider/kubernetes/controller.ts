// The Kubernetes controller, wired top to bottom: its health endpoints first (they answer while it waits for its
// certificates), then config discovery, the watches, the infrastructure applier and status sink, the runner
// that drives a pass through them, and last the run for the leader lease. The parts built early tell their news
// (a watch event, a proxy's report, a status someone else wrote) through one relay that the runner and the
// status sink join once they exist. Every replica translates and serves discovery; only the leader writes.
import type { PorticoGatewayConfig } from '../../api/controller-config.js';
import type { FleetCertificateLifetime } from '../../certificates/fleet-certificate-lifetime.js';
import { type CertificatePins, createCertificatePins } from '../../discovery/certificate-pins.js';
import { createDiscoveryServer, type DiscoveryServer } from '../../discovery/server.js';
import type { ProxyRuntime } from '../../infra/kubernetes/render.js';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import type { Logger } from '../../platform/log-line.js';
import type { RateLimit } from '../../platform/token-bucket.js';
import { logConditionChanges } from '../../runner/condition-changes.js';
import { createRunner, type ResourceSource, type Runner } from '../../runner/runner.js';
import type { Schedule } from '../../runner/schedule.js';
import type { StageTrace } from '../../trace/propagation-trace.js';
import type { ApiClient } from './api-client.js';
import { type ServerTls, waitForCertificateAuthority, waitForServerTls } from './certificate-secrets.js';
import { clusterSource } from './cluster-source.js';
import { dataPlaneRoute, peerCredential } from './data-plane-access.js';
import { followFleetSecrets, observedFingerprint } from './fleet-certificate-pins.js';
import { createFleetClientSecrets } from './fleet-client-secrets.js';
import { type Endpoint, serveHttp } from './http-endpoints.js';
import { createInfraApplier, type InfraApplier } from './infra-applier.js';
import { type InstalledCrdsWatch, watchInstalledCrds } from './installed-crds.js';
import { createLeadership, type LeaseOptions } from './leadership.js';
import { type ControllerMetrics, createMetrics, formatMetrics } from './metrics.js';
import {
  createPeerDataPlane,
  DATA_PLANE_PATH,
  type DataPlaneReport,
  type PeerDataPlane,
  replicaAddresses,
} from './peer-data-plane.js';
import { createResourceWatch, type ResourceWatch } from './resource-watch.js';
import { type ApiStatusSink, apiStatusSink } from './status-sink.js';
import { createStatusWriter } from './status-writer.js';
import { tokenAuth } from './token-auth.js';
import { createWriteRate, DEFAULT_STATUS_WRITE_RATE } from './write-rate.js';

export interface KubernetesControllerOptions extends LeaseOptions {
  config: PorticoGatewayConfig;
  client: ApiClient;
  controllerNamespace: string;
  /** The proxies' image and how they reach discovery. */
  proxy: ProxyRuntime;
  discoveryAddress: string;
  healthAddress: string;
  metricsAddress: string;
  log: Logger;
  /** Controller Namespace Mode: the fleets' client certificate lifetime and renewal grace (7 days, 5 min). */
  fleetCertificates?: FleetCertificateLifetime;
  /** Told when a change is seen, translated and sent (diagnostics: `--trace-events`). */
  trace?: StageTrace;
  /** The client side rate limit of status writes (default DEFAULT_STATUS_WRITE_RATE). */
  statusWriteRate?: RateLimit;
}

export interface KubernetesController {
  discoveryPort: number;
  healthAddress: string;
  metricsAddress: string;
  close(): Promise<void>;
}

/** How far the start has got: the endpoints serve from its first moment and answer from what exists so far. */
interface StartProgress {
  /** The discovery server's key, which the other replicas prove they hold to read /dataplane. */
  serverKeyPem?: string;
  discovery?: Pick<DiscoveryServer, 'nodes'>;
  runner?: Pick<Runner, 'ready'>;
}

/** Health, readiness and this replica's data plane report on one address; Prometheus metrics on another. */
async function serveEndpoints(
  options: KubernetesControllerOptions,
  metrics: ControllerMetrics,
  progress: StartProgress,
): Promise<{ health: Endpoint; metrics: Endpoint }> {
  const ownNodes = (): DataPlaneReport['nodes'] => progress.discovery?.nodes() ?? [];
  const health = await serveHttp(options.healthAddress, '--health-address', {
    '/healthz': () => ({ status: 200, body: 'ok\n' }),
    '/readyz': () =>
      progress.runner?.ready() === true
        ? { status: 200, body: 'ready\n' }
        : { status: 503, body: 'starting\n' },
    [DATA_PLANE_PATH]: dataPlaneRoute(
      () => ({ identity: options.identity, nodes: ownNodes() }),
      () => progress.serverKeyPem,
    ),
  });
  const metricsEndpoint = await serveHttp(options.metricsAddress, '--metrics-address', {
    '/metrics': () => ({ status: 200, body: formatMetrics(metrics), type: 'text/plain; version=0.0.4' }),
  });
  return { health, metrics: metricsEndpoint };
}

/** Config discovery: mutual TLS, or in Gateway Namespace Mode the tokens of each fleet's ServiceAccount. */
function createControllerDiscovery(
  options: KubernetesControllerOptions,
  tls: ServerTls,
  infraOf: (fleet: string) => FleetInfra | undefined,
  certificates: CertificatePins | undefined,
): DiscoveryServer {
  const { client, controllerNamespace, log } = options;
  return createDiscoveryServer({
    address: options.discoveryAddress,
    tls,
    auth:
      options.config.provider.kubernetes.deploy.type === 'GatewayNamespace'
        ? tokenAuth({
            client,
            controllerNamespace,
            fleetAccount: (fleet) => {
              const infra = infraOf(fleet);
              return infra === undefined ? undefined : { namespace: infra.namespace, name: infra.name };
            },
          })
        : { mode: 'mtls', ...(certificates === undefined ? {} : { certificates }) },
    log,
    ...(options.trace === undefined ? {} : { trace: options.trace }),
  });
}

/**
 * The infrastructure applier; in Controller Namespace Mode it has each fleet's client certificate signed, and
 * renewed when due. It writes only while `leading`, and a fleet whose problem changed or whose certificate is
 * due wakes a pass (`wake`).
 */
async function createClusterInfra(
  options: KubernetesControllerOptions,
  caPem: string,
  resources: ResourceWatch,
  leading: () => boolean,
  wake: () => void,
): Promise<InfraApplier> {
  const { client, controllerNamespace, log } = options;
  const deployType = options.config.provider.kubernetes.deploy.type;
  const fleetSecrets =
    deployType === 'ControllerNamespace'
      ? createFleetClientSecrets({
          client,
          ca: await waitForCertificateAuthority(client, controllerNamespace, log),
          log,
          ...(options.fleetCertificates === undefined ? {} : { lifetime: options.fleetCertificates }),
          onRenewalDue: wake,
          observed: (namespace, name) => observedFingerprint(resources.raw('Secret', `${namespace}/${name}`)),
        })
      : undefined;
  return createInfraApplier({
    client,
    proxy: options.proxy,
    controllerNamespace,
    deployType,
    caPem,
    fleetSecrets,
    active: leading,
    onProblemsChanged: wake,
    log,
  });
}

interface ClusterParts {
  resources: ResourceWatch;
  statusSink: ApiStatusSink;
  discovery: DiscoveryServer;
  infra: InfraApplier;
  peers: PeerDataPlane;
  metrics: ControllerMetrics;
  /** Whether this replica leads (and is not closing): only then infrastructure and statuses are written. */
  leading: () => boolean;
  /** Until then a new leader's stored Programmed verdicts stand in for proxies still reconnecting. */
  graceEndsAt: () => number;
  /** The last translation's infrastructure by fleet, for discovery's token check and the data plane. */
  infraIndex: { byFleet: Map<string, FleetInfra> };
  /** Controller Namespace Mode: the certificate each fleet's Secret holds, for discovery. */
  certificates: CertificatePins | undefined;
  /** The Gateway API CRDs installed, for the GatewayClasses' SupportedVersion. */
  crds: InstalledCrdsWatch;
}

function createClusterRunner(options: KubernetesControllerOptions, parts: ClusterParts): Runner {
  const { config, log, controllerNamespace } = options;
  const { resources, discovery, infra, infraIndex } = parts;
  return createRunner({
    translate: {
      controllerName: config.gateway.controllerName,
      controllerNamespace,
      deployType: config.provider.kubernetes.deploy.type,
    },
    source: withInstalledCrds(
      withCertificatePins(
        clusterSource({
          resources,
          ownNodes: () => discovery.nodes(),
          peers: parts.peers,
          infraOf: (fleet) => infraIndex.byFleet.get(fleet),
          graceEndsAt: parts.graceEndsAt,
        }),
        parts.certificates,
        controllerNamespace,
      ),
      parts.crds,
    ),
    discovery,
    infra: { apply: async (result) => ({ problems: await infra.sync(result.infra) }) },
    statuses: parts.statusSink,
    applies: parts.leading,
    metrics: parts.metrics,
    onError: (error) => log.error(`reconcile failed, retrying: ${(error as Error).message}`),
    onConditionChanges: (changes) => logConditionChanges(log, changes),
    ...(options.trace === undefined ? {} : { trace: options.trace }),
    onTranslated: (result, pass) => {
      log.debug(
        `reconcile ${pass.number}: ${result.fleets.length} fleets, ${result.statuses.length} statuses in ${(pass.seconds * 1000).toFixed(1)} ms`,
      );
      infraIndex.byFleet = new Map(result.infra.map((i) => [i.fleet, i]));
    },
  });
}

/** Every pass's snapshot carries the Gateway API CRDs as last read (the translator's SupportedVersion). */
function withInstalledCrds(source: ResourceSource, crds: InstalledCrdsWatch): ResourceSource {
  return {
    ...source,
    snapshot() {
      const snapshot = source.snapshot();
      const installedCrds = crds.current();
      return installedCrds === undefined ? snapshot : { ...snapshot, installedCrds };
    },
  };
}

/** Every replica's passes keep discovery's certificate table to the fleets' Secrets as the watch sees them. */
function withCertificatePins(
  source: ResourceSource,
  certificates: CertificatePins | undefined,
  controllerNamespace: string,
): ResourceSource {
  if (certificates === undefined) return source;
  const follow = followFleetSecrets(certificates, controllerNamespace);
  return {
    ...source,
    snapshot() {
      const snapshot = source.snapshot();
      follow(snapshot.secrets);
      return snapshot;
    },
  };
}

/**
 * News from the parts built first (the watches, the data plane, certificate renewals), held for the runner and the
 * status sink that act on it: those read from the news' sources, so they are built after them and join here.
 * Nothing is told before the watches start, which is after both have joined.
 */
interface NewsRelay {
  /** Something changed: a pass soon. */
  wake(): void;
  /** A status changed on the API server alone (someone else's write): checked again by itself, without a pass. */
  statusChanged(kind: string, key: string): void;
  join(parts: { runner: Pick<Schedule, 'soon'>; statuses: Pick<ApiStatusSink, 'recheck'> }): void;
}

function createNewsRelay(): NewsRelay {
  let runner: Pick<Schedule, 'soon'> | undefined;
  let statuses: Pick<ApiStatusSink, 'recheck'> | undefined;
  return {
    wake: () => runner?.soon(),
    statusChanged: (kind, key) => statuses?.recheck(kind, key),
    join(parts) {
      runner = parts.runner;
      statuses = parts.statuses;
    },
  };
}

export async function startKubernetesController(
  options: KubernetesControllerOptions,
): Promise<KubernetesController> {
  const { client, config, log, controllerNamespace, trace } = options;
  const metrics = createMetrics();
  const progress: StartProgress = {};
  const endpoints = await serveEndpoints(options, metrics, progress);

  // Config discovery, once the certificates exist. In mutual TLS, proxies' streams wait until the first pass has
  // read the fleets' Secrets.
  const tls = await waitForServerTls(client, controllerNamespace, log);
  progress.serverKeyPem = tls.keyPem;
  const infraIndex = { byFleet: new Map<string, FleetInfra>() };
  const certificates =
    config.provider.kubernetes.deploy.type === 'ControllerNamespace' ? createCertificatePins() : undefined;
  const discovery = createControllerDiscovery(options, tls, (f) => infraIndex.byFleet.get(f), certificates);
  progress.discovery = discovery;
  const { port: discoveryPort } = await discovery.start();

  // The parts a pass reads and writes. Only the leader writes, and it runs for the lease after the first pass.
  const news = createNewsRelay();
  const leadership = createLeadership({ ...options, controllerName: config.gateway.controllerName });
  let closed = false;
  const leading = (): boolean => !closed && leadership.isLeader();
  const resources = createResourceWatch({
    client,
    config,
    controllerNamespace,
    onChange:
      trace === undefined
        ? news.wake
        : () => {
            trace('watch-event');
            news.wake();
          },
    onStatusChange: news.statusChanged,
    log,
  });
  const crds = watchInstalledCrds({ client, log, onChange: news.wake });
  const peers = createPeerDataPlane({
    identity: options.identity,
    peers: () => replicaAddresses(resources.snapshot(), controllerNamespace),
    onChange: news.wake,
    log,
    credential: () => peerCredential(tls.keyPem),
  });
  const infra = await createClusterInfra(options, tls.caPem, resources, leading, news.wake);
  const rate = createWriteRate(options.statusWriteRate ?? DEFAULT_STATUS_WRITE_RATE);
  metrics.statusWriteRate = rate;
  const statusSink = apiStatusSink(
    resources,
    createStatusWriter({
      client,
      controllerName: config.gateway.controllerName,
      onWrite: () => {
        metrics.statusWrites++;
      },
      rate,
    }),
    leading,
    { log },
  );

  const runner = createClusterRunner(options, {
    crds,
    resources,
    statusSink,
    discovery,
    infra,
    peers,
    metrics,
    leading,
    graceEndsAt: leadership.graceEndsAt,
    infraIndex,
    certificates,
  });
  progress.runner = runner;
  news.join({ runner, statuses: statusSink });
  // Proxy Acks only move statuses (Programmed): they settle for a moment into one pass, which a config change
  // arriving meanwhile takes over, so an edit never waits behind the pass its predecessor's Ack started.
  discovery.on('change', runner.settle);

  await Promise.all([resources.start(), crds.start()]);
  log.info(
    `controller ${config.gateway.controllerName}: watching, discovery on port ${discoveryPort}, status writes at most ${rate.limit.perSecond}/s (bursts of ${rate.limit.burst})`,
  );
  await runner.now();
  leadership.run({ metrics, infra, statuses: statusSink, peers, runner });

  return {
    discoveryPort,
    healthAddress: endpoints.health.address,
    metricsAddress: endpoints.metrics.address,
    async close() {
      closed = true;
      runner.stop();
      crds.stop();
      infra.stop();
      statusSink.stop();
      discovery.off('change', runner.settle);
      await leadership.stop();
      peers.stop();
      resources.stop();
      await Promise.all([discovery.close(), endpoints.health.close(), endpoints.metrics.close()]);
    },
  };
}

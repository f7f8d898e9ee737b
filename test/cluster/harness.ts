// startCluster(): an API server, garbage collector, node agent and service proxies in this process.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { defaultImageRules, type ImageRule } from './agent/images.js';
import { startNodeAgent } from './agent/node-agent.js';
import { installWorkloadControllers } from './agent/workloads.js';
import { createAuthenticator } from './apiserver/authn.js';
import { installCrdSupport } from './apiserver/crds.js';
import { installGarbageCollector } from './apiserver/gc.js';
import { createLifecycle, type Lifecycle } from './apiserver/lifecycle.js';
import { installNamespaceDefaults } from './apiserver/namespace-defaults.js';
import { asKubeObject } from './apiserver/object.js';
import { builtinType, createRegistry } from './apiserver/resources.js';
import { startApiServer } from './apiserver/server.js';
import { createStore } from './apiserver/store.js';
import { issueToken, type TokenParams } from './apiserver/token-api.js';
import { createTokenSigner } from './apiserver/tokens.js';
import { writeKubeconfig } from './kubeconfig.js';
import { createServingCertificate } from './pki.js';
import { installDnsHosts } from './services/dns-hosts.js';
import { installEndpointSliceController, SERVICE_NAME_LABEL } from './services/endpoint-slices.js';
import { createAddressRange, releaseRange } from './services/ip-range.js';
import { installServiceProxy } from './services/service-proxy.js';

export type { ImageRule } from './agent/images.js';

export interface ClusterOptions {
  /** Working directory (certificates, kubeconfig, pod files); a fresh temp dir by default, removed on stop. */
  dir?: string;
  /** API server port on 127.0.0.1; 0 picks a free one. */
  port?: number;
  kubeconfigPath?: string;
  /** How many events the watch history keeps; older resourceVersions get 410 Gone. */
  historySize?: number;
  bookmarkIntervalMs?: number;
  /** Minimum `expirationSeconds` of TokenRequests and projected tokens (a real cluster: 600). */
  minTokenExpirationSeconds?: number;
  log?: (line: string) => void;
  /** Run pods as local processes, Services as TCP proxies (default true); false: API server only. */
  workloads?: boolean;
  /** The echo image runs the inline echo server, or `portico echo` from the built CLI. */
  echo?: 'inline' | 'portico';
  /** Extra image → program rules, checked before the defaults. */
  images?: ImageRule[];
  maxProbeIntervalMs?: number;
  restartBackoffMs?: { initial: number; max: number };
  /** How often pods refresh volumes (secrets, tokens) and controllers resync. */
  resyncMs?: number;
  /** Install the Gateway API and DataPlaneProxy CRDs from test/cluster/crds/ at start. */
  crds?: boolean;
}

/** The CRD manifests tests may apply (Gateway API kinds, DataPlaneProxy). */
export const CRD_FILES = ['gateway-api.yaml', 'portico.yaml'].map((f) =>
  fileURLToPath(new URL(`./crds/${f}`, import.meta.url)),
);

function installCrdFiles(lifecycle: Lifecycle): void {
  const crdType = lifecycle.registry.find('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!;
  for (const file of CRD_FILES) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const object = asKubeObject(doc.toJS());
      if (typeof object === 'string') throw new Error(`${file}: ${object}`);
      lifecycle.create(crdType, object);
    }
  }
}

export interface Cluster {
  kubeconfigPath: string;
  server: string;
  adminToken: string;
  caPem: string;
  dir: string;
  lifecycle: Lifecycle;
  /** Signs a service account token directly (tests: expired tokens, other audiences). */
  issueToken(params: TokenParams): string;
  /** Ends every open watch stream (clients must resume or relist). */
  dropWatches(): void;
  stop(): Promise<void>;
}

const DEFAULTS = {
  port: 0,
  workloads: true,
  echo: 'inline' as 'inline' | 'portico',
  maxProbeIntervalMs: 300,
  restartBackoffMs: { initial: 500, max: 10_000 },
  resyncMs: 1000,
  historySize: 1000,
  bookmarkIntervalMs: 5000,
  minTokenExpirationSeconds: 600,
};

const NAMESPACES = builtinType('namespaces');
const SERVICES = builtinType('services');
const SLICES = builtinType('endpointslices');

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const o = { ...DEFAULTS, ...options };
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'portico-sim-'));
  const log = options.log ?? (() => {});
  const podIPs = createAddressRange(20);
  const clusterIPs = createAddressRange(30);
  const loadBalancerIPs = createAddressRange(40);
  const apiServiceIP = clusterIPs.allocate();
  const pki = createServingCertificate(dir, [`IP:${apiServiceIP}`]);
  const adminToken = randomBytes(24).toString('base64url');
  const store = createStore(o.historySize);
  const registry = createRegistry();
  const lifecycle = createLifecycle(store, registry);
  const signer = createTokenSigner();
  const authenticator = createAuthenticator(adminToken, signer, store);
  installCrdSupport(lifecycle);
  const stopGc = installGarbageCollector(lifecycle);
  const stopDefaults = installNamespaceDefaults(lifecycle, pki.caPem);
  for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    lifecycle.create(NAMESPACES, { metadata: { name } });
  }
  if (options.crds === true) installCrdFiles(lifecycle);
  const api = await startApiServer(lifecycle, authenticator, signer, {
    host: '127.0.0.1',
    port: o.port,
    certPem: pki.certPem,
    keyPem: pki.keyPem,
    bookmarkIntervalMs: o.bookmarkIntervalMs,
    minTokenExpirationSeconds: o.minTokenExpirationSeconds,
    log,
  });
  const apiPort = Number(new URL(api.url).port);
  const stops: (() => void | Promise<void>)[] = [];
  if (o.workloads) {
    const hostsFile = join(dir, 'hosts.json');
    stops.push(installDnsHosts(lifecycle, hostsFile));
    stops.push(installEndpointSliceController(lifecycle, log));
    const proxy = installServiceProxy(lifecycle, clusterIPs, loadBalancerIPs, log);
    stops.push(() => proxy.stop());
    lifecycle.create(SERVICES, {
      metadata: {
        name: 'kubernetes',
        namespace: 'default',
        labels: { component: 'apiserver', provider: 'kubernetes' },
      },
      spec: {
        clusterIP: apiServiceIP,
        ports: [{ name: 'https', port: 443, targetPort: apiPort, protocol: 'TCP' }],
      },
    });
    lifecycle.create(SLICES, {
      metadata: { name: 'kubernetes', namespace: 'default', labels: { [SERVICE_NAME_LABEL]: 'kubernetes' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      ports: [{ name: 'https', port: apiPort, protocol: 'TCP' }],
    });
    stops.push(installWorkloadControllers(lifecycle, o.resyncMs, log));
    const agent = startNodeAgent({
      lifecycle,
      issueToken: (params) => issueToken(lifecycle, signer, params),
      network: { apiServiceHost: apiServiceIP, apiServicePort: 443, hostsFile },
      images: [...(options.images ?? []), ...defaultImageRules(o.echo)],
      podIPs,
      dir,
      maxProbeIntervalMs: o.maxProbeIntervalMs,
      restartBackoffMs: o.restartBackoffMs,
      resyncMs: o.resyncMs,
      minTokenExpirationSeconds: o.minTokenExpirationSeconds,
      log,
    });
    stops.push(() => agent.stop());
  }
  const kubeconfigPath = options.kubeconfigPath ?? join(dir, 'kubeconfig');
  writeKubeconfig(kubeconfigPath, api.url, pki.caPem, adminToken);
  return {
    kubeconfigPath,
    server: api.url,
    adminToken,
    caPem: pki.caPem,
    dir,
    lifecycle,
    dropWatches: () => api.dropWatches(),
    issueToken: (params) => issueToken(lifecycle, signer, params).token,
    async stop() {
      for (const stop of stops.reverse()) await stop();
      stopGc();
      stopDefaults();
      await api.close();
      for (const range of [podIPs, clusterIPs, loadBalancerIPs]) releaseRange(range);
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

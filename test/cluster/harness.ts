// startCluster(): an API server, garbage collector, node agent and service proxies in this process.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAuthenticator } from './apiserver/authn.js';
import { installCrdSupport } from './apiserver/crds.js';
import { installGarbageCollector } from './apiserver/gc.js';
import { createLifecycle, type Lifecycle } from './apiserver/lifecycle.js';
import { installNamespaceDefaults } from './apiserver/namespace-defaults.js';
import { BUILTIN_TYPES, createRegistry } from './apiserver/resources.js';
import { startApiServer } from './apiserver/server.js';
import { createStore } from './apiserver/store.js';
import { issueToken, type TokenParams } from './apiserver/token-api.js';
import { createTokenSigner } from './apiserver/tokens.js';
import { writeKubeconfig } from './kubeconfig.js';
import { createServingCertificate } from './pki.js';

export interface ClusterOptions {
  /** Working directory (certificates, kubeconfig, pod files); a fresh temp dir by default, removed on stop. */
  dir?: string;
  /** API server port on 127.0.0.1; 0 picks a free one. */
  port?: number;
  kubeconfigPath?: string;
  /** How many events the watch history keeps; older resourceVersions get 410 Gone. */
  historySize?: number;
  bookmarkIntervalMs?: number;
  /** TokenRequest minimum `expirationSeconds` (a real API server: 600). */
  minTokenExpirationSeconds?: number;
  log?: (line: string) => void;
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
  stop(): Promise<void>;
}

const DEFAULTS = {
  port: 0,
  historySize: 1000,
  bookmarkIntervalMs: 5000,
  minTokenExpirationSeconds: 600,
};

const NAMESPACES = BUILTIN_TYPES.find((t) => t.resource === 'namespaces')!;

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const o = { ...DEFAULTS, ...options };
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'portico-sim-'));
  const log = options.log ?? (() => {});
  const pki = createServingCertificate(dir);
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
  const api = await startApiServer(lifecycle, authenticator, signer, {
    host: '127.0.0.1',
    port: o.port,
    certPem: pki.certPem,
    keyPem: pki.keyPem,
    bookmarkIntervalMs: o.bookmarkIntervalMs,
    minTokenExpirationSeconds: o.minTokenExpirationSeconds,
    log,
  });
  const kubeconfigPath = options.kubeconfigPath ?? join(dir, 'kubeconfig');
  writeKubeconfig(kubeconfigPath, api.url, pki.caPem, adminToken);
  return {
    kubeconfigPath,
    server: api.url,
    adminToken,
    caPem: pki.caPem,
    dir,
    lifecycle,
    issueToken: (params) => issueToken(lifecycle, signer, params).token,
    async stop() {
      stopGc();
      stopDefaults();
      await api.close();
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

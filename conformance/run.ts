// `npm run conformance`: the upstream Gateway API conformance suite, unmodified, with the profiles whose route kind
// Portico claims (GATEWAY-HTTP, GATEWAY-GRPC, GATEWAY-TLS, GATEWAY-TCP, GATEWAY-UDP as their route kinds are), against
// Portico installed with its Helm chart on the real test cluster, once per deployment mode. Features are not
// passed to the suite: it reads them from the GatewayClass's status.supportedFeatures, as it would from any
// implementation. A run fails when the suite fails, and when it passes less than the committed report of the
// mode (a feature dropped from the claim, fewer core tests): reports only move forward. It runs over the Gateway
// API's experimental channel CRDs by default (the class claims the experimental features only where their fields
// survive), and puts the standard ones back after.
//
//   npm run conformance [-- --mode controller-namespace|gateway-namespace|all] [--run-test NAME]
//                       [--channel experimental|standard] [--update-reports]
// It starts its own cluster, or uses the one PORTICO_TEST_CLUSTER names (the test runner's).
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_CONTROLLER_NAME } from '../src/api/controller-config.js';
import { type GatewayApiChannel, installGatewayApiChannel } from '../test/cluster/gateway-api-channel.js';
import { attachCluster, type Cluster, startCluster } from '../test/cluster/harness.js';
import { helm } from '../test/cluster/helm.js';
import { asList, call, eventually } from '../test/cluster/kube-api.js';
import { CLUSTER_ENV } from '../test/cluster/shared.js';
import { binary, cacheDir, REPO, readManifest } from '../toolchain/manifest.js';
import { MODES, type Mode, profilesClaimed, profilesOf, reportPath, reportRegressions } from './report.js';

const GATEWAY_CLASS = 'portico';
const RELEASE = 'portico';
const NAMESPACE = 'portico-gateway-system';

/** Runs a program to its end without blocking this process: the cluster's load-balancer controller lives here. */
function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', ...options });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

/**
 * What a failed run leaves for finding out why (the suite says only that a Gateway was not Programmed in time):
 * where every pod and Gateway stood, the cluster's warnings, and the controller's log.
 */
function printDiagnostics(cluster: Cluster): void {
  const views = [
    ['get', 'pods', '-A', '-o', 'wide'],
    ['get', 'gateways', '-A'],
    ['get', 'events', '-A', '--field-selector', 'type=Warning'],
    ['logs', '-n', NAMESPACE, 'deployment/portico-gateway', '--tail=300'],
  ];
  for (const args of views) {
    try {
      console.log(`$ kubectl ${args.join(' ')}\n${cluster.kubectl(args)}`);
    } catch (error) {
      console.log(`kubectl ${args.join(' ')}: ${(error as Error).message}`);
    }
  }
}

/**
 * The suite's GatewayClass, its proxies asking for a quarter of the CPU they ask by default: at 110m a pod, the
 * test node's 2 CPUs hold 17 proxies, fewer than the suite's Gateways at a peak (its base Gateways, four tests at a
 * time, and the pods of ended tests still draining), and a Gateway whose pod cannot be scheduled is never Programmed.
 * One process each (`workers: 1`), not one per node CPU plus a primary: the suite starts a proxy per Gateway, and
 * three Node processes starting for each on the 2-vCPU node kept its namespace from all being ready within the
 * observedGeneration tests' 60 s. The workers themselves are tested by the e2e suites.
 */
function gatewayClass(): { kind: 'List'; apiVersion: 'v1'; items: object[] } {
  const proxy = { name: 'conformance', namespace: NAMESPACE };
  return {
    kind: 'List',
    apiVersion: 'v1',
    items: [
      {
        apiVersion: 'gateway.portico.io/v1alpha1',
        kind: 'DataPlaneProxy',
        metadata: proxy,
        spec: {
          workers: 1,
          kubernetes: { container: { resources: { requests: { cpu: '25m', memory: '64Mi' } } } },
        },
      },
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GatewayClass',
        metadata: { name: GATEWAY_CLASS },
        spec: {
          controllerName: DEFAULT_CONTROLLER_NAME,
          parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', ...proxy },
        },
      },
    ],
  };
}

async function runMode(cluster: Cluster, mode: Mode, runTest: string | undefined): Promise<string> {
  const started = Date.now();
  // Each stage's time since the mode began: where a slow mode spends it (install, suite, uninstall, cleanup).
  const stage = (what: string) =>
    console.log(`conformance ${mode}: ${what} at ${((Date.now() - started) / 1000).toFixed(0)} s`);
  // A namespace of that name still terminating (an earlier run, or tests that just ended) cannot be installed to.
  await eventually(
    async () => {
      const r = await call(cluster, 'GET', `/api/v1/namespaces/${NAMESPACE}`);
      return r.status === 404 || r.body.status?.phase !== 'Terminating' ? true : undefined;
    },
    `namespace ${NAMESPACE} to finish terminating`,
    180_000,
    500,
  );
  stage('previous namespace gone');
  await helm(
    cluster,
    [
      'install',
      RELEASE,
      join(REPO, 'charts/gateway-helm'),
      '-n',
      NAMESPACE,
      '--create-namespace',
      '--wait',
      '--timeout',
      '180s',
      '--set',
      `config.deployType=${MODES[mode]}`,
    ],
    { output: 'inherit' },
  );
  const classPath = `/apis/gateway.networking.k8s.io/v1/gatewayclasses/${GATEWAY_CLASS}`;
  cluster.kubectl(['apply', '-f', '-'], JSON.stringify(gatewayClass()));
  // The suite infers the features from this list, and the profiles follow from it: wait until it is published.
  const features = await eventually(
    async () => {
      const r = await call(cluster, 'GET', classPath);
      const list: unknown = r.body.status?.supportedFeatures;
      return Array.isArray(list) ? list.map((f: { name: string }) => f.name) : undefined;
    },
    'the GatewayClass supportedFeatures',
    60_000,
  );
  // The controller read the installed Gateway API CRDs (by name, with the chart's RBAC) and found the release it
  // is built for: a run on CRDs it does not support would measure the wrong thing.
  const supported = await eventually(
    async () => {
      const r = await call(cluster, 'GET', classPath);
      const conditions: unknown = r.body.status?.conditions;
      const found = Array.isArray(conditions)
        ? (conditions as { type: string; status: string; message: string }[]).find(
            (c) => c.type === 'SupportedVersion',
          )
        : undefined;
      return found;
    },
    'the GatewayClass SupportedVersion condition',
    60_000,
  );
  if (supported.status !== 'True') throw new Error(`GatewayClass ${GATEWAY_CLASS}: ${supported.message}`);
  stage(`SupportedVersion=True: ${supported.message}`);
  const out = join(cacheDir(), 'conformance', `${mode}.yaml`);
  mkdirSync(join(out, '..'), { recursive: true });
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  const args = [
    '-test.run',
    'TestConformance',
    '-test.v',
    '-test.timeout',
    '40m',
    // The suite's parallel tests (a quarter of them, each with Gateways of its own) mostly wait on pods and the
    // API server: four at a time instead of GOMAXPROCS (2 here).
    '-test.parallel',
    '4',
    `-kubeconfig=${cluster.kubeconfigPath}`,
    `-gateway-class=${GATEWAY_CLASS}`,
    `-conformance-profiles=${profilesClaimed(features).join(',')}`,
    '-organization=Portico',
    '-project=portico',
    '-url=https://gateway.portico.io',
    `-version=v${pkg.version}`,
    '-contact=portico-maintainers',
    `-mode=${mode}`,
    `-report-output=${out}`,
    // GatewayStaticAddresses: an address of the cluster's load-balancer pool nothing else is given (the pool hands
    // out .10 upwards), and one outside it (TEST-NET-1), which the load balancer cannot give.
    `-usable-address=${cluster.addresses.lbCidr.split('.').slice(0, 3).join('.')}.250`,
    '-unusable-address=192.0.2.10',
    ...(runTest === undefined ? [] : [`-run-test=${runTest}`]),
  ];
  stage('installed, supportedFeatures published');
  const suite = await run(binary(cluster.toolchain, 'conformance.test'), args, {
    cwd: join(REPO, 'conformance'),
  });
  stage('suite ended');
  if (suite !== 0) printDiagnostics(cluster);
  await helm(cluster, ['uninstall', RELEASE, '-n', NAMESPACE, '--wait'], { output: 'inherit' });
  stage('uninstalled');
  await call(cluster, 'DELETE', classPath);
  // The namespace controller re-checks a namespace only after its pods' grace period (90 s for proxies): wait
  // for the proxies the cleanup hook removed to finish draining first, then the namespace goes at once.
  await eventually(
    async () => {
      const pods = await call(cluster, 'GET', `/api/v1/namespaces/${NAMESPACE}/pods`);
      return asList(pods.body.items).length === 0 ? true : undefined;
    },
    `the pods of ${NAMESPACE} to terminate`,
    120_000,
    500,
  );
  stage('pods terminated');
  await call(cluster, 'DELETE', `/api/v1/namespaces/${NAMESPACE}`);
  await eventually(
    async () =>
      (await call(cluster, 'GET', `/api/v1/namespaces/${NAMESPACE}`)).status === 404 ? true : undefined,
    `namespace ${NAMESPACE} deleted`,
    120_000,
    500,
  );
  console.log(`conformance ${mode}: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (suite !== 0) throw new Error(`the conformance suite failed in ${mode} mode`);
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mode: { type: 'string', default: 'all' },
      'run-test': { type: 'string' },
      channel: { type: 'string', default: 'experimental' },
      'update-reports': { type: 'boolean', default: false },
    },
  });
  const channel = values.channel as GatewayApiChannel;
  if (channel !== 'experimental' && channel !== 'standard')
    throw new Error(`--channel ${channel}: not experimental or standard`);
  const modes = (values.mode === 'all' ? Object.keys(MODES) : [values.mode]) as Mode[];
  for (const m of modes)
    if (!(m in MODES)) throw new Error(`--mode ${m}: not ${Object.keys(MODES).join(', ')} or all`);
  readManifest();
  const shared = process.env[CLUSTER_ENV];
  const cluster =
    shared !== undefined && shared !== ''
      ? attachCluster(shared)
      : await startCluster({ log: (l) => console.log(`cluster: ${l}`) });
  const own = shared === undefined || shared === '';
  if (own) {
    // Ctrl-C or a CI timeout: the cluster this run started goes with it.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => void cluster.stop().finally(() => process.exit(130)));
    }
  }
  const problems: string[] = [];
  try {
    if (channel === 'experimental') await installGatewayApiChannel(cluster, 'experimental');
    for (const mode of modes) {
      const fresh = await runMode(cluster, mode, values['run-test']);
      if (values['run-test'] !== undefined) continue;
      const committed = reportPath(mode);
      if (existsSync(committed)) {
        for (const p of reportRegressions(profilesOf(committed), profilesOf(fresh)))
          problems.push(`${mode}: ${p}`);
      }
      if (values['update-reports']) {
        mkdirSync(join(committed, '..'), { recursive: true });
        copyFileSync(fresh, committed);
        console.log(`wrote ${committed}`);
      }
    }
  } finally {
    if (own) await cluster.stop();
    else if (channel === 'experimental') await installGatewayApiChannel(cluster, 'standard');
  }
  if (problems.length > 0) throw new Error(`conformance regressed:\n${problems.join('\n')}`);
}

main().catch((error: Error) => {
  console.error(error.message);
  process.exit(1);
});

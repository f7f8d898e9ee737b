// Installs Portico on the simulator the way users do: `portico install --render` applied object by object

// (server-side apply); the certgen Job runs as a Pod from its template (the simulator has no Job controller).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  CA_SECRET,
  CLIENT_CERT_SECRET,
  SERVER_CERT_SECRET,
} from '../../../src/provider/kubernetes/certificate-secrets.js';
import { asList, call, eventually, type Loose } from '../../cluster/client.js';
import type { Cluster } from '../../cluster/harness.js';
import { PORTICO_MAIN } from '../../support/portico.js';

export const IMAGE = 'portico:e2e';
const CERTGEN_SECRETS = [CA_SECRET, SERVER_CERT_SECRET, CLIENT_CERT_SECRET];

type Obj = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
};

const PLURALS: Record<string, string> = {
  Namespace: 'namespaces',
  CustomResourceDefinition: 'customresourcedefinitions',
  ServiceAccount: 'serviceaccounts',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
  Role: 'roles',
  RoleBinding: 'rolebindings',
  ConfigMap: 'configmaps',
  Deployment: 'deployments',
  Service: 'services',
  Pod: 'pods',
  GatewayClass: 'gatewayclasses',
  Gateway: 'gateways',
  HTTPRoute: 'httproutes',
  DataPlaneProxy: 'dataplaneproxies',
};

export function pathOf(o: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}): string {
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const ns = o.metadata.namespace === undefined ? '' : `/namespaces/${o.metadata.namespace}`;
  const plural = PLURALS[o.kind];
  if (plural === undefined) throw new Error(`no plural for ${o.kind}`);
  return `${base}${ns}/${plural}/${o.metadata.name}`;
}

/** Server-side apply, as `kubectl apply --server-side` does. */
export async function apply(cluster: Cluster, o: Obj): Promise<Loose> {
  const reply = await call(cluster, 'PATCH', `${pathOf(o)}?fieldManager=e2e&force=true`, o, {
    contentType: 'application/apply-patch+yaml',
  });
  if (reply.status !== 200 && reply.status !== 201) {
    throw new Error(`apply ${o.kind} ${o.metadata.name}: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  return reply.body;
}

export function render(sets: string[]): Obj[] {
  const out = spawnSync(
    process.execPath,
    [PORTICO_MAIN, 'install', '--render', ...sets.flatMap((s) => ['--set', s])],
    {
      encoding: 'utf8',
    },
  );
  if (out.status !== 0) throw new Error(`install --render failed: ${out.stderr}`);
  return parseAllDocuments(out.stdout).map((d) => d.toJS() as Obj);
}

async function readyPods(cluster: Cluster, namespace: string, selector: string): Promise<Loose[]> {
  const reply = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
  );
  return asList(reply.body.items).filter(
    (p) =>
      p.metadata?.deletionTimestamp === undefined &&
      asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'),
  );
}

/** Applies the rendered manifests, runs certgen, and waits for a ready controller. */
export async function install(cluster: Cluster, sets: string[]): Promise<{ namespace: string }> {
  const manifests = render([`image=${IMAGE}`, ...sets]);
  const job = manifests.find((m) => m.kind === 'Job');
  const namespace = manifests.find((m) => m.kind === 'Namespace')!.metadata.name;
  for (const m of manifests) if (m.kind !== 'Job') await apply(cluster, m);
  if (job === undefined) throw new Error('no certgen Job rendered');
  const template = (
    job.spec as { template: { metadata: Record<string, unknown>; spec: Record<string, unknown> } }
  ).template;
  const pod: Obj = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...template.metadata, name: `${job.metadata.name}-run`, namespace },
    spec: template.spec,
  };
  await apply(cluster, pod);
  // The simulator has no Job controller to let certgen finish: delete its pod only once it created every Secret
  // (it creates them one by one; deleting it earlier left proxy pods Pending on a missing client Secret).
  await eventually(
    async () => {
      for (const name of CERTGEN_SECRETS) {
        const r = await call(cluster, 'GET', `/api/v1/namespaces/${namespace}/secrets/${name}`);
        if (r.status !== 200) return undefined;
      }
      return true;
    },
    'the certgen Secrets',
    30_000,
  );
  await call(cluster, 'DELETE', pathOf(pod));
  await eventually(
    async () =>
      (await readyPods(cluster, namespace, 'app.kubernetes.io/component=controller')).length > 0
        ? true
        : undefined,
    'a ready controller',
    30_000,
  );
  return { namespace };
}

/** The logs of every pod whose directory name starts with `prefix` (`<ns>_<name>`), for failure messages. */
export function podLogs(cluster: Cluster, prefix: string): string {
  const root = join(cluster.dir, 'pods');
  if (!existsSync(root)) return '';
  const out: string[] = [];
  for (const pod of readdirSync(root).filter((d) => d.startsWith(prefix))) {
    const logs = join(root, pod, 'logs');
    if (!existsSync(logs)) continue;
    for (const file of readdirSync(logs))
      out.push(`--- ${pod}/${file}\n${readFileSync(join(logs, file), 'utf8').slice(-4000)}`);
  }
  return out.join('\n');
}

/**
 * Each file starts a simulator with a dozen Node pods, too heavy next to other files on 2 cores:
 * scripts/run-tests.mjs runs them in a second phase, one file at a time, with PORTICO_E2E_KUBERNETES=1.
 */
export const E2E_ENABLED = process.env.PORTICO_E2E_KUBERNETES === '1';
export const E2E_SKIP: string | false = E2E_ENABLED ? false : 'set PORTICO_E2E_KUBERNETES=1 to run';

// Makes each fleet's ServiceAccount, Deployment and Service exist (server-side apply, field manager
// portico-gateway), only when the desired object changed; deletes what no fleet wants any more; never adopts
// an object of the same name that Portico does not manage (the fleet's Gateways report it instead).

import {
  CONTROLLER_NAMESPACE_LABEL,
  type ProxyRuntime,
  renderFleetObjects,
} from '../../infra/kubernetes/render.js';
import type { DeployType, FleetInfra } from '../../ir/fleet-infra.js';
import {
  COMMON_INFRA_LABELS,
  OWNING_GATEWAY_NAME_LABEL,
  OWNING_GATEWAY_NAMESPACE_LABEL,
  OWNING_GATEWAYCLASS_LABEL,
} from '../../ir/fleet-infra.js';
import { CA_CONFIGMAP, FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL } from '../../ir/well-known.js';
import { type ApiClient, expectStatus, type JsonObject } from './api-client.js';
import type { FleetClientSecrets } from './fleet-client-secrets.js';
import { collectionPath, objectPath } from './watched-kinds.js';

interface KindPath {
  kind: string;
  apiVersion: string;
  resource: string;
}

const INFRA_KINDS: readonly KindPath[] = [
  { kind: 'ServiceAccount', apiVersion: 'v1', resource: 'serviceaccounts' },
  { kind: 'Deployment', apiVersion: 'apps/v1', resource: 'deployments' },
  { kind: 'Service', apiVersion: 'v1', resource: 'services' },
];
const CONFIGMAP: KindPath = { kind: 'ConfigMap', apiVersion: 'v1', resource: 'configmaps' };

export interface InfraApplierOptions {
  client: ApiClient;
  proxy: ProxyRuntime;
  controllerNamespace: string;
  deployType: DeployType;
  /** The CA proxies trust; copied into Gateway namespaces in Gateway Namespace Mode. */
  caPem: string;
  /** Controller Namespace Mode: each fleet's client certificate Secret, owned by its ServiceAccount. */
  fleetSecrets?: FleetClientSecrets;
  log(line: string): void;
}

export interface InfraApplier {
  /** Applies the fleets' objects; returns fleet → why its infrastructure could not be created. */
  sync(infra: readonly FleetInfra[]): Promise<Map<string, string>>;
  /** Forget what was applied (a new leader re-checks everything). */
  reset(): void;
}

interface Desired {
  kind: KindPath;
  namespace: string;
  name: string;
  fleet?: string;
  infra?: FleetInfra;
  body: JsonObject;
  json: string;
}

const keyOf = (kind: string, namespace: string, name: string) => `${kind} ${namespace}/${name}`;

/** The fleet key an existing object's owning labels name (undefined: they name none). */
function owningFleet(labels: Record<string, string>): string | undefined {
  const merged = labels[OWNING_GATEWAYCLASS_LABEL];
  if (merged !== undefined) return merged;
  const namespace = labels[OWNING_GATEWAY_NAMESPACE_LABEL];
  const name = labels[OWNING_GATEWAY_NAME_LABEL];
  return namespace === undefined || name === undefined ? undefined : `${namespace}/${name}`;
}

export function createInfraApplier(options: InfraApplierOptions): InfraApplier {
  const { client, log } = options;
  /** key → JSON of the body last applied successfully. */
  let applied = new Map<string, string>();
  /** ServiceAccount key → uid, the owner of the fleet's client certificate Secret. */
  let accountUids = new Map<string, string>();
  let swept = false;

  function desiredObjects(infra: readonly FleetInfra[]): Desired[] {
    const out: Desired[] = [];
    const caNamespaces = new Set<string>();
    for (const fleet of infra) {
      const objects = renderFleetObjects(fleet, {
        ...options.proxy,
        controllerNamespace: options.controllerNamespace,
        deployType: options.deployType,
      });
      const bodies = [objects.serviceAccount, objects.deployment, objects.service];
      INFRA_KINDS.forEach((kind, i) => {
        const body = bodies[i] as unknown as JsonObject;
        out.push({
          kind,
          namespace: fleet.namespace,
          name: fleet.name,
          fleet: fleet.fleet,
          infra: fleet,
          body,
          json: JSON.stringify(body),
        });
      });
      if (options.deployType === 'GatewayNamespace') caNamespaces.add(fleet.namespace);
    }
    for (const namespace of [...caNamespaces].sort()) {
      const body: JsonObject = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: CA_CONFIGMAP,
          namespace,
          labels: { ...COMMON_INFRA_LABELS, [CONTROLLER_NAMESPACE_LABEL]: options.controllerNamespace },
        },
        data: { 'ca.crt': options.caPem },
      };
      out.push({ kind: CONFIGMAP, namespace, name: CA_CONFIGMAP, body, json: JSON.stringify(body) });
    }
    return out;
  }

  async function foreignOwner(d: Desired): Promise<string | undefined> {
    const path = objectPath(d.kind.apiVersion, d.kind.resource, d.name, d.namespace);
    const reply = await client.request('GET', path);
    if (reply.status === 404) return undefined;
    const body = expectStatus(reply, `get ${d.kind.kind} ${d.namespace}/${d.name}`, [200]);
    const labels = ((body.metadata as JsonObject | undefined)?.labels ?? {}) as Record<string, string>;
    const id = `${d.kind.kind} ${d.namespace}/${d.name}`;
    if (labels[MANAGED_BY_LABEL] !== MANAGED_BY) {
      return `${id} already exists and is not managed by portico-gateway; it is left alone`;
    }
    // Another fleet's (another controller's, in a shared namespace) whose name collides: never take it over.
    const owner = owningFleet(labels);
    if (owner === undefined || d.fleet === undefined || owner === d.fleet) return undefined;
    return `${id} already exists for fleet ${owner}, whose infrastructure name is the same; it is left alone`;
  }

  /** Applies the object; returns its uid. */
  async function apply(d: Desired): Promise<string | undefined> {
    const path = `${objectPath(d.kind.apiVersion, d.kind.resource, d.name, d.namespace)}?fieldManager=${FIELD_MANAGER}&force=true`;
    const reply = await client.request('PATCH', path, d.body, 'application/apply-patch+yaml');
    const body = expectStatus(reply, `apply ${d.kind.kind} ${d.namespace}/${d.name}`, [200, 201]);
    const uid = (body.metadata as JsonObject | undefined)?.uid;
    return typeof uid === 'string' ? uid : undefined;
  }

  async function remove(kind: KindPath, namespace: string, name: string): Promise<void> {
    const reply = await client.request(
      'DELETE',
      objectPath(kind.apiVersion, kind.resource, name, namespace),
      {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Background',
      },
    );
    expectStatus(reply, `delete ${kind.kind} ${namespace}/${name}`, [200, 202, 404]);
    if (reply.status !== 404) log(`deleted ${kind.kind} ${namespace}/${name}`);
  }

  // After a restart the applied map is empty: objects left by fleets that vanished meanwhile are found by label.
  async function sweepControllerNamespace(wanted: Set<string>): Promise<void> {
    const selector = encodeURIComponent(
      `${MANAGED_BY_LABEL}=${MANAGED_BY},app.kubernetes.io/name=portico-proxy`,
    );
    for (const kind of INFRA_KINDS) {
      const path = `${collectionPath(kind.apiVersion, kind.resource, options.controllerNamespace)}?labelSelector=${selector}`;
      const body = expectStatus(await client.request('GET', path), `list ${kind.resource}`, [200]);
      for (const item of (body.items ?? []) as JsonObject[]) {
        const name = String((item.metadata as JsonObject).name);
        if (!wanted.has(keyOf(kind.kind, options.controllerNamespace, name))) {
          await remove(kind, options.controllerNamespace, name);
        }
      }
    }
  }

  return {
    reset() {
      applied = new Map();
      accountUids = new Map();
      options.fleetSecrets?.reset();
      swept = false;
    },
    async sync(infra) {
      const problems = new Map<string, string>();
      const desired = desiredObjects(infra);
      const wanted = new Set(desired.map((d) => keyOf(d.kind.kind, d.namespace, d.name)));
      for (const d of desired) {
        const key = keyOf(d.kind.kind, d.namespace, d.name);
        if (d.fleet !== undefined && problems.has(d.fleet)) continue;
        if (applied.get(key) !== d.json) {
          const foreign = await foreignOwner(d);
          if (foreign !== undefined) {
            if (d.fleet !== undefined) problems.set(d.fleet, foreign);
            applied.delete(key);
            continue;
          }
          const uid = await apply(d);
          if (uid !== undefined) accountUids.set(key, uid);
          applied.set(key, d.json);
          log(`applied ${key}`);
        }
        // The fleet's client identity exists before its Deployment (applied next) mounts it.
        const account = accountUids.get(key);
        if (d.kind.kind === 'ServiceAccount' && d.infra !== undefined && options.fleetSecrets !== undefined) {
          const problem =
            account === undefined
              ? `ServiceAccount ${d.namespace}/${d.name} has no uid to own its client certificate Secret`
              : await options.fleetSecrets.ensure(d.infra, { name: d.name, uid: account });
          if (problem !== undefined && d.fleet !== undefined) problems.set(d.fleet, problem);
        }
      }
      for (const key of [...applied.keys()]) {
        if (wanted.has(key)) continue;
        const [kindName, nsName] = key.split(' ') as [string, string];
        const [namespace, name] = nsName.split('/') as [string, string];
        const kind = [...INFRA_KINDS, CONFIGMAP].find((k) => k.kind === kindName)!;
        // The CA ConfigMap may be shared by Gateways Portico no longer serves there; it is harmless to keep.
        if (kind !== CONFIGMAP) await remove(kind, namespace, name);
        // The Secret would also go with its owner, the ServiceAccount; deleting it now leaves no key behind.
        if (kind.kind === 'ServiceAccount') await options.fleetSecrets?.remove(namespace, name);
        accountUids.delete(key);
        applied.delete(key);
      }
      if (!swept) {
        await sweepControllerNamespace(wanted);
        swept = true;
      }
      return problems;
    },
  };
}

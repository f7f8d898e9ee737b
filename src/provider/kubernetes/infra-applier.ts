// Makes each fleet's ServiceAccount, Service, Deployment or DaemonSet, and the HorizontalPodAutoscaler and
// PodDisruptionBudget its shape asks for exist (server-side apply, field manager portico-gateway), only when the
// desired object changed; deletes what no fleet wants any more, and what a fleet's shape no longer wants (an
// autoscaler or budget removed, the workload of the other kind once the new one is ready); never adopts or
// deletes an object of the same name that Portico does not manage (the fleet's Gateways report it instead).

import { BlockList, isIP } from 'node:net';
import {
  CONTROLLER_NAMESPACE_LABEL,
  fleetObjectList,
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
import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';
import { type BackoffTimings, OBJECT_BACKOFF } from '../../runner/backoff.js';
import type { InfraProblem } from '../../runner/infra-problems.js';
import { createObjectWork } from '../../runner/object-work.js';
import { type ApiClient, expectStatus, type JsonObject, KubernetesApiError } from './api-client.js';
import type { FleetClientSecrets } from './fleet-client-secrets.js';
import { infraProblemOf } from './infra-problem.js';
import { appliedReplicas, REPLICAS_HANDOVER_MANAGER, replicasHandover } from './replicas-handover.js';
import { collectionPath, objectPath } from './watched-kinds.js';

interface KindPath {
  kind: string;
  apiVersion: string;
  resource: string;
}

const DEPLOYMENT: KindPath = { kind: 'Deployment', apiVersion: 'apps/v1', resource: 'deployments' };
const DAEMONSET: KindPath = { kind: 'DaemonSet', apiVersion: 'apps/v1', resource: 'daemonsets' };
/** Kinds a fleet has in some shapes only: one its shape no longer wants is deleted. */
const SHAPE_KINDS: readonly KindPath[] = [
  DEPLOYMENT,
  DAEMONSET,
  { kind: 'HorizontalPodAutoscaler', apiVersion: 'autoscaling/v2', resource: 'horizontalpodautoscalers' },
  { kind: 'PodDisruptionBudget', apiVersion: 'policy/v1', resource: 'poddisruptionbudgets' },
];
// The Service before the workload (the renderer's order): a fleet whose Service is refused (a quota) starts no
// pods it cannot use.
const INFRA_KINDS: readonly KindPath[] = [
  { kind: 'ServiceAccount', apiVersion: 'v1', resource: 'serviceaccounts' },
  { kind: 'Service', apiVersion: 'v1', resource: 'services' },
  ...SHAPE_KINDS,
];
const CONFIGMAP: KindPath = { kind: 'ConfigMap', apiVersion: 'v1', resource: 'configmaps' };
/** How often, and how long, a new workload is watched for readiness before the one it replaces is deleted. */
const WORKLOAD_READY_POLL_MS = 2000;
const WORKLOAD_READY_WAIT_MS = 120_000;

export interface InfraApplierOptions {
  client: ApiClient;
  proxy: ProxyRuntime;
  controllerNamespace: string;
  deployType: DeployType;
  /** The CA proxies trust; copied into Gateway namespaces in Gateway Namespace Mode. */
  caPem: string;
  /** Controller Namespace Mode: each fleet's client certificate Secret, owned by its ServiceAccount. */
  fleetSecrets?: FleetClientSecrets;
  /** Whether this replica may write now (while it leads); work found otherwise is dropped. */
  active?: () => boolean;
  /** A fleet's problem appeared, changed or went: run a pass so its Gateways say so. */
  onProblemsChanged?: () => void;
  /** Per-fleet retries (default 2 s doubling to 5 min) and how many fleets are applied at once (default 4). */
  backoff?: BackoffTimings;
  concurrency?: number;
  /** The retry clock and timer (tests drive them by hand). */
  now?: () => number;
  setTimer?: (ms: number, fire: () => void) => () => void;
  /** A new workload's readiness is read every `pollMs` for up to `waitMs` before the old one goes. */
  workloadReady?: { pollMs: number; waitMs: number };
  log: Logger;
}

export interface InfraApplier {
  /**
   * Starts applying the fleets' objects (each fleet on its own: one's failure waits its own backoff, the others
   * go on) and deleting what no fleet wants; returns fleet → why its infrastructure is not there, as known now.
   */
  sync(infra: readonly FleetInfra[]): Promise<Map<string, InfraProblem>>;
  /** Resolves once no fleet's work runs or waits to start (tests; retries waiting for their time excepted). */
  idle(): Promise<void>;
  /** Forget what was applied (a new leader re-checks everything). */
  reset(): void;
  stop(): void;
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

/** One fleet's objects in the order they are applied (the CA ConfigMap of its namespace first, if any). */
interface FleetObjects {
  fleet: string;
  infra: FleetInfra;
  objects: Desired[];
}

const keyOf = (kind: string, namespace: string, name: string) => `${kind} ${namespace}/${name}`;

/**
 * The owner an object's owning labels name: a fleet key, except that a name longer than a label value is there as
 * its `labelValue` (cut, with a hash). Compared with the same reading of the fleet's own labels, never with its key.
 */
function owningFleet(labels: Record<string, string>): string | undefined {
  const merged = labels[OWNING_GATEWAYCLASS_LABEL];
  if (merged !== undefined) return merged;
  const namespace = labels[OWNING_GATEWAY_NAMESPACE_LABEL];
  const name = labels[OWNING_GATEWAY_NAME_LABEL];
  return namespace === undefined || name === undefined ? undefined : `${namespace}/${name}`;
}

const INFRA_CONCURRENCY = 4;
const SWEEP = '#sweep';

function caConfigMap(options: InfraApplierOptions, namespace: string): Desired {
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
  return { kind: CONFIGMAP, namespace, name: CA_CONFIGMAP, body, json: JSON.stringify(body) };
}

function desiredFleets(options: InfraApplierOptions, infra: readonly FleetInfra[]): FleetObjects[] {
  return infra.map((fleet) => {
    const objects = renderFleetObjects(fleet, {
      ...options.proxy,
      controllerNamespace: options.controllerNamespace,
      deployType: options.deployType,
    });
    const own = fleetObjectList(objects).map((object): Desired => {
      const body = object as unknown as JsonObject;
      const kind = INFRA_KINDS.find((k) => k.kind === body.kind)!;
      const d = { kind, namespace: fleet.namespace, name: fleet.name, body, json: JSON.stringify(body) };
      return { ...d, fleet: fleet.fleet, infra: fleet };
    });
    // Its pods mount the CA ConfigMap: it is part of the fleet's work, before the Deployment.
    const ca = options.deployType === 'GatewayNamespace' ? [caConfigMap(options, fleet.namespace)] : [];
    return { fleet: fleet.fleet, infra: fleet, objects: [...ca, ...own] };
  });
}

/** Whether an object exists, and why it must be left alone when it does (undefined: it is `fleet`'s). */
async function existing(
  client: ApiClient,
  kind: KindPath,
  namespace: string,
  name: string,
  infra: FleetInfra | undefined,
): Promise<{ exists: boolean; served?: JsonObject; foreign?: string }> {
  const reply = await client.request('GET', objectPath(kind.apiVersion, kind.resource, name, namespace));
  if (reply.status === 404) return { exists: false };
  const body = expectStatus(reply, `get ${kind.kind} ${namespace}/${name}`, [200]);
  const labels = ((body.metadata as JsonObject | undefined)?.labels ?? {}) as Record<string, string>;
  const id = `${kind.kind} ${namespace}/${name}`;
  if (labels[MANAGED_BY_LABEL] !== MANAGED_BY) {
    return {
      exists: true,
      foreign: `${id} already exists and is not managed by portico-gateway; it is left alone`,
    };
  }
  // Another fleet's (another controller's, in a shared namespace) whose name collides: never take it over.
  const owner = owningFleet(labels);
  if (owner === undefined || infra === undefined || owner === owningFleet(infra.labels)) {
    return { exists: true, served: body };
  }
  const foreign = `${id} already exists for fleet ${owner}, whose infrastructure name is the same; it is left alone`;
  return { exists: true, foreign };
}

/** Whether a workload as the API server serves it has all its pods of its latest generation ready. */
function workloadReady(body: JsonObject): boolean {
  const generation = Number((body.metadata as JsonObject | undefined)?.generation ?? 0);
  const status = (body.status ?? {}) as Record<string, unknown>;
  if (Number(status.observedGeneration ?? -1) < generation) return false;
  if (body.kind === 'DaemonSet') {
    const desired = Number(status.desiredNumberScheduled ?? 0);
    return (
      desired > 0 &&
      Number(status.numberReady ?? 0) >= desired &&
      Number(status.updatedNumberScheduled ?? 0) >= desired
    );
  }
  const replicas = Number((body.spec as JsonObject | undefined)?.replicas ?? 1);
  return Number(status.readyReplicas ?? 0) >= replicas && Number(status.updatedReplicas ?? 0) >= replicas;
}

const defaultTimer = (ms: number, fire: () => void): (() => void) => {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
};

/** Waits until the fleet's new workload serves; throws (the old one stays, the fleet retries) if it does not. */
async function awaitWorkloadReady(
  options: InfraApplierOptions,
  workload: Desired,
  replaced: string,
): Promise<void> {
  const { pollMs, waitMs } = options.workloadReady ?? {
    pollMs: WORKLOAD_READY_POLL_MS,
    waitMs: WORKLOAD_READY_WAIT_MS,
  };
  const now = options.now ?? Date.now;
  const setTimer = options.setTimer ?? defaultTimer;
  const deadline = now() + waitMs;
  const path = objectPath(
    workload.kind.apiVersion,
    workload.kind.resource,
    workload.name,
    workload.namespace,
  );
  for (;;) {
    const body = expectStatus(await options.client.request('GET', path), `get ${workload.kind.kind}`, [200]);
    if (workloadReady(body)) return;
    if (now() >= deadline)
      throw new PorticoError(
        'E_KUBERNETES',
        `not all its pods ready after ${Math.round(waitMs / 1000)} s; the ${replaced} it replaces keeps serving until they are`,
      );
    await new Promise<void>((resolve) => setTimer(pollMs, resolve));
  }
}

/** Applies `body` (by default the object's) as `manager`; returns the object's uid. */
async function applyObject(
  client: ApiClient,
  d: Desired,
  body: JsonObject = d.body,
  manager = FIELD_MANAGER,
): Promise<string | undefined> {
  const path = `${objectPath(d.kind.apiVersion, d.kind.resource, d.name, d.namespace)}?fieldManager=${manager}&force=true`;
  const reply = await client.request('PATCH', path, body, 'application/apply-patch+yaml');
  const served = expectStatus(reply, `apply ${d.kind.kind} ${d.namespace}/${d.name}`, [200, 201]);
  const uid = (served.metadata as JsonObject | undefined)?.uid;
  return typeof uid === 'string' ? uid : undefined;
}

async function removeObject(
  options: InfraApplierOptions,
  kind: KindPath,
  namespace: string,
  name: string,
): Promise<void> {
  const { client, log } = options;
  const reply = await client.request('DELETE', objectPath(kind.apiVersion, kind.resource, name, namespace), {
    apiVersion: 'v1',
    kind: 'DeleteOptions',
    propagationPolicy: 'Background',
  });
  expectStatus(reply, `delete ${kind.kind} ${namespace}/${name}`, [200, 202, 404]);
  if (reply.status !== 404) log.info(`deleted ${kind.kind} ${namespace}/${name}`);
}

/** What one applier knows between passes; a new leader starts from a fresh one. */
interface ApplierState {
  /** key → JSON of the body last applied successfully. */
  applied: Map<string, string>;
  /** ServiceAccount key → uid, the owner of the fleet's client certificate Secret. */
  accountUids: Map<string, string>;
  /** fleet → why its infrastructure is not there (its last attempt failed). */
  problems: Map<string, InfraProblem>;
  /** Every object key the last sync wanted (the sweep reads it when it runs). */
  wanted: Set<string>;
  /** Keys of shape kinds known to hold nothing of a fleet's to delete (absent, or left alone as foreign). */
  absent: Set<string>;
  swept: boolean;
}

function newApplierState(): ApplierState {
  return {
    applied: new Map(),
    accountUids: new Map(),
    problems: new Map(),
    wanted: new Set(),
    absent: new Set(),
    swept: false,
  };
}

function setProblem(
  options: InfraApplierOptions,
  state: ApplierState,
  fleet: string,
  problem: InfraProblem | undefined,
): void {
  const before = state.problems.get(fleet);
  if (problem === undefined) state.problems.delete(fleet);
  else state.problems.set(fleet, problem);
  if (JSON.stringify(before) !== JSON.stringify(problem)) options.onProblemsChanged?.();
}

/** The cluster's Service CIDRs (networking.k8s.io/v1 ServiceCIDR); undefined when they cannot be listed. */
async function serviceCidrs(client: ApiClient): Promise<BlockList | undefined> {
  const reply = await client.request('GET', '/apis/networking.k8s.io/v1/servicecidrs');
  if (reply.status !== 200) return undefined;
  const list = new BlockList();
  for (const item of (reply.body.items ?? []) as JsonObject[]) {
    for (const cidr of ((item.spec as JsonObject | undefined)?.cidrs ?? []) as string[]) {
      const [net, bits] = cidr.split('/');
      if (net === undefined || bits === undefined || isIP(net) === 0) continue;
      list.addSubnet(net, Number(bits), isIP(net) === 6 ? 'ipv6' : 'ipv4');
    }
  }
  return list;
}

/**
 * The Service's body with the cluster IP its Gateway asks for (routability Cluster) only where it can be had: a
 * new Service, an address in the cluster's Service CIDRs (checked by the API server too, when they cannot be
 * listed). A made Service keeps its cluster IP (immutable), so the Gateway reports the entry unmet instead of the
 * whole Service failing to apply.
 */
async function withGivableClusterIP(
  client: ApiClient,
  body: JsonObject,
  served: JsonObject | undefined,
): Promise<JsonObject> {
  const wanted = (body.spec as JsonObject).clusterIP;
  if (typeof wanted !== 'string') return body;
  const current = (served?.spec as JsonObject | undefined)?.clusterIP;
  // A made Service keeps the cluster IP it has (applied as it is, so the field's owner stays the same).
  if (served !== undefined)
    return typeof current === 'string' && current !== ''
      ? { ...body, spec: { ...(body.spec as JsonObject), clusterIP: current } }
      : withoutClusterIP(body);
  const cidrs = await serviceCidrs(client);
  const family = isIP(wanted) === 6 ? 'ipv6' : 'ipv4';
  if (isIP(wanted) === 0 || (cidrs !== undefined && !cidrs.check(wanted, family)))
    return withoutClusterIP(body);
  return body;
}

function withoutClusterIP(body: JsonObject): JsonObject {
  const { clusterIP: _, ...spec } = body.spec as JsonObject;
  return { ...body, spec };
}

/** Applies a fleet's Service; a cluster IP the API server refuses (taken already) is left to it to choose. */
async function applyService(
  options: InfraApplierOptions,
  d: Desired,
  served: JsonObject | undefined,
): Promise<string | undefined> {
  const body = await withGivableClusterIP(options.client, d.body, served);
  try {
    return await applyObject(options.client, d, body);
  } catch (error) {
    const refused = error instanceof KubernetesApiError && error.status === 422;
    if (!refused || (body.spec as JsonObject).clusterIP === undefined) throw error;
    options.log.warn(
      `Service ${d.namespace}/${d.name}: the cluster IP asked for was refused: ${error.message}`,
    );
    return applyObject(options.client, d, withoutClusterIP(body));
  }
}

/** Makes one object exist as desired (unless it already was); a refusal is thrown, naming the object. */
async function ensureObject(options: InfraApplierOptions, state: ApplierState, d: Desired): Promise<void> {
  const { client, log } = options;
  const key = keyOf(d.kind.kind, d.namespace, d.name);
  if (state.applied.get(key) !== d.json) {
    const found = await existing(client, d.kind, d.namespace, d.name, d.infra);
    if (found.foreign !== undefined) {
      state.applied.delete(key);
      throw new PorticoError('E_CONFLICT', found.foreign);
    }
    // An autoscaler now sets the replicas: another manager holds them first, so dropping them resets nothing.
    const handedOver = found.served === undefined ? undefined : appliedReplicas(found.served);
    if (d.kind === DEPLOYMENT && !('replicas' in (d.body.spec as JsonObject)) && handedOver !== undefined) {
      const body = replicasHandover(d.namespace, d.name, handedOver);
      await applyObject(client, d, body, REPLICAS_HANDOVER_MANAGER);
    }
    const uid =
      d.kind.kind === 'Service' ? await applyService(options, d, found.served) : await applyObject(client, d);
    if (uid !== undefined) state.accountUids.set(key, uid);
    state.applied.set(key, d.json);
    state.absent.delete(key);
    log.info(`applied ${key}`);
  }
  // The fleet's client identity exists before its Deployment (state.applied next) mounts it.
  if (d.kind.kind !== 'ServiceAccount' || d.infra === undefined || options.fleetSecrets === undefined) return;
  const account = state.accountUids.get(key);
  const problem =
    account === undefined
      ? `ServiceAccount ${d.namespace}/${d.name} has no uid to own its client certificate Secret`
      : await options.fleetSecrets.ensure(d.infra, { name: d.name, uid: account });
  if (problem !== undefined) throw new PorticoError('E_CONFLICT', problem);
}

/**
 * Deletes the fleet's objects of kinds its shape no longer has (an autoscaler, a budget, the workload of the other
 * kind, this last only once the new workload is ready), each only if it is the fleet's own.
 */
async function removeUnwantedShapes(
  options: InfraApplierOptions,
  state: ApplierState,
  fleet: FleetObjects,
  onObject: (d: Desired) => void,
): Promise<void> {
  const { namespace, name } = fleet.infra;
  const wanted = new Set(fleet.objects.map((d) => d.kind.kind));
  const workload = fleet.objects.find((d) => d.kind === DEPLOYMENT || d.kind === DAEMONSET);
  for (const kind of SHAPE_KINDS) {
    const key = keyOf(kind.kind, namespace, name);
    if (wanted.has(kind.kind) || state.absent.has(key)) continue;
    const found = await existing(options.client, kind, namespace, name, fleet.infra);
    if (found.exists && found.foreign === undefined) {
      if (workload !== undefined && (kind === DEPLOYMENT || kind === DAEMONSET)) {
        onObject(workload);
        await awaitWorkloadReady(options, workload, kind.kind);
      }
      await removeObject(options, kind, namespace, name);
    }
    state.applied.delete(key);
    state.absent.add(key);
  }
}

async function applyFleet(
  options: InfraApplierOptions,
  state: ApplierState,
  fleet: FleetObjects,
): Promise<void> {
  let current = fleet.objects[0];
  try {
    for (const d of fleet.objects) {
      current = d;
      await ensureObject(options, state, d);
    }
    await removeUnwantedShapes(options, state, fleet, (d) => {
      current = d;
    });
  } catch (error) {
    const id =
      current === undefined ? fleet.fleet : `${current.kind.kind} ${current.namespace}/${current.name}`;
    setProblem(options, state, fleet.fleet, infraProblemOf(error, id));
    throw error;
  }
  setProblem(options, state, fleet.fleet, undefined);
}

/** Deletes the objects of a fleet no longer wanted (the CA ConfigMap may serve others: it stays). */
async function removeFleet(
  options: InfraApplierOptions,
  state: ApplierState,
  keys: readonly string[],
): Promise<void> {
  for (const key of keys) {
    const [kindName, nsName] = key.split(' ') as [string, string];
    const [namespace, name] = nsName.split('/') as [string, string];
    const kind = [...INFRA_KINDS, CONFIGMAP].find((k) => k.kind === kindName)!;
    if (kind !== CONFIGMAP) await removeObject(options, kind, namespace, name);
    // The Secret would also go with its owner, the ServiceAccount; deleting it now leaves no key behind.
    if (kind.kind === 'ServiceAccount') await options.fleetSecrets?.remove(namespace, name);
    state.accountUids.delete(key);
    state.applied.delete(key);
  }
}

// After a restart the state.applied map is empty: objects left by fleets that vanished meanwhile are found by label.
async function sweepControllerNamespace(options: InfraApplierOptions, state: ApplierState): Promise<void> {
  const { client } = options;
  const selector = encodeURIComponent(
    `${MANAGED_BY_LABEL}=${MANAGED_BY},app.kubernetes.io/name=portico-proxy`,
  );
  const liveNames = new Set(
    [...state.wanted]
      .map((key) => key.slice(key.indexOf(' ') + 1).split('/'))
      .filter(([namespace]) => namespace === options.controllerNamespace)
      .map(([, name]) => name),
  );
  for (const kind of INFRA_KINDS) {
    const path = `${collectionPath(kind.apiVersion, kind.resource, options.controllerNamespace)}?labelSelector=${selector}`;
    const body = expectStatus(await client.request('GET', path), `list ${kind.resource}`, [200]);
    for (const item of (body.items ?? []) as JsonObject[]) {
      const name = String((item.metadata as JsonObject).name);
      // A live fleet's own work deletes the kinds its shape dropped (a replaced workload only once the new serves).
      if (liveNames.has(name)) continue;
      if (!state.wanted.has(keyOf(kind.kind, options.controllerNamespace, name))) {
        await removeObject(options, kind, options.controllerNamespace, name);
      }
    }
  }
  state.swept = true;
}

export function createInfraApplier(options: InfraApplierOptions): InfraApplier {
  const { log } = options;
  const state = newApplierState();
  const work = createObjectWork({
    concurrency: options.concurrency ?? INFRA_CONCURRENCY,
    backoff: options.backoff ?? OBJECT_BACKOFF,
    allowed: options.active,
    now: options.now,
    setTimer: options.setTimer,
    onError: (key, error, retryInMs) =>
      log.warn(`${key}: ${(error as Error).message}; retrying in ${Math.round(retryInMs / 1000)} s`),
  });

  return {
    reset() {
      work.reset();
      Object.assign(state, newApplierState());
      options.fleetSecrets?.reset();
    },
    async sync(infra) {
      const fleets = desiredFleets(options, infra);
      state.wanted = new Set(
        fleets.flatMap((f) => f.objects.map((d) => keyOf(d.kind.kind, d.namespace, d.name))),
      );
      // Work is keyed by the objects' namespace and name, so a fleet's deletion and its return never overlap.
      const keep = new Set<string>([SWEEP]);
      for (const fleet of fleets) {
        const key = `${fleet.infra.namespace}/${fleet.infra.name}`;
        keep.add(key);
        work.submit(key, fleet.objects.map((d) => d.json).join('\n'), () =>
          applyFleet(options, state, fleet),
        );
      }
      const unwanted = new Map<string, string[]>();
      for (const key of state.applied.keys()) {
        if (state.wanted.has(key)) continue;
        const nsName = key.slice(key.indexOf(' ') + 1);
        unwanted.set(nsName, [...(unwanted.get(nsName) ?? []), key]);
      }
      for (const [nsName, keys] of unwanted) {
        if (keep.has(nsName)) continue;
        keep.add(nsName);
        work.submit(nsName, 'absent', () => removeFleet(options, state, keys));
      }
      work.retain(keep);
      const live = new Set(fleets.map((f) => f.fleet));
      for (const fleet of [...state.problems.keys()]) if (!live.has(fleet)) state.problems.delete(fleet);
      if (!state.swept) work.submit(SWEEP, 'sweep', () => sweepControllerNamespace(options, state));
      return new Map(state.problems);
    },
    idle: () => work.idle(),
    stop: () => work.stop(),
  };
}

// The proxy's side of one discovery update: a full or delta message turned into a whole FleetConfig on top of
// what the proxy applied, applied (or found unchanged), and answered with the Ack or Nack it earns. A resource
// whose body does not parse is refused alone; the rest of the update still applies.

import type { ApplyOutcome, RejectedResource } from '../ir/apply-outcome.js';
import { FLEET_CONFIG_SCHEMA_VERSION, type FleetConfig, isFleetResourceType } from '../ir/fleet-config.js';
import { type FleetConfigChange, patchFleetConfig } from '../ir/fleet-config-patch.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import type { Ack, ServerMessage } from './protocol.js';
import { assembleFleetConfig, parseResource, type ReceivedResource, resourceKey } from './resources.js';

/** What the proxy serves: the resources of the last applied config, and what it reported about them. */
export interface AppliedState {
  resources: Map<string, ReceivedResource>;
  /** The config assembled from `resources`: a delta patches it instead of reassembling and sorting everything. */
  config?: FleetConfig;
  version?: string;
  listenerErrors: { listener: string; message: string }[];
  rejected: RejectedResource[];
}

export type UpdateResult =
  | { ok: false; error: string }
  | { ok: true; applied: AppliedState; ack: Ack; rejected: RejectedResource[] };

export const NOTHING_APPLIED: AppliedState = { resources: new Map(), listenerErrors: [], rejected: [] };

/** Applies a config; `change`, when given, says how it came from the config applied last. */
export type ApplyConfig = (
  config: FleetConfig,
  version: string,
  change?: FleetConfigChange,
) => Promise<ApplyOutcome>;

export async function applyUpdate(
  fleet: string,
  applied: AppliedState,
  message: ServerMessage,
  apply: ApplyConfig,
  trace?: StageTrace,
): Promise<UpdateResult> {
  if (message.schemaVersion !== FLEET_CONFIG_SCHEMA_VERSION) {
    const error = `fleet config schema version ${message.schemaVersion} is not supported (this proxy: ${FLEET_CONFIG_SCHEMA_VERSION})`;
    return { ok: false, error };
  }
  // A delta names each resource once (a repeat would make the patch and the resources disagree): else assemble.
  if (!message.full && applied.config !== undefined && uniqueKeys(message)) {
    return applyDelta(applied, applied.config, message, apply, trace);
  }
  const { candidate, unparsed } = candidateResources(applied, message);
  const config = assembleFleetConfig(fleet, candidate.values());
  trace?.('proxy-assembled', message.version);
  let outcome: ApplyOutcome;
  if (message.full && applied.version !== undefined && sameResources(candidate, applied.resources)) {
    // A resync after reconnecting that brings nothing new: keep serving, don't rebuild.
    outcome = { ok: true, listenerErrors: applied.listenerErrors, rejected: applied.rejected };
  } else outcome = await applied0(apply, config, message.version);
  if (!outcome.ok) return outcome;
  trace?.('proxy-applied', message.version);
  return applyResult(candidate, config, message, outcome, unparsed);
}

/**
 * A delta patched onto the config applied (no copy of every resource): applied with the change it makes, and
 * only once applied put into the resources the proxy keeps.
 */
async function applyDelta(
  applied: AppliedState,
  since: FleetConfig,
  message: ServerMessage,
  apply: ApplyConfig,
  trace: StageTrace | undefined,
): Promise<UpdateResult> {
  const received: ReceivedResource[] = [];
  const unparsed: RejectedResource[] = [];
  for (const resource of message.resources) {
    const parsed = parsedOrLastGood(applied, resource, unparsed);
    if (parsed !== undefined) received.push(parsed);
  }
  const removed = message.removed.filter((r) => isFleetResourceType(r.type)) as FleetConfigChange['removed'];
  const config = patchFleetConfig(since, received, removed);
  trace?.('proxy-assembled', message.version);
  const change: FleetConfigChange = {
    since,
    config,
    changed: received.map((r) => ({ type: r.type, name: r.name })),
    removed,
  };
  const outcome = await applied0(apply, config, message.version, change);
  if (!outcome.ok) return outcome;
  trace?.('proxy-applied', message.version);
  // The previous state is done with once this one is applied: its map becomes this one's.
  const resources = applied.resources;
  for (const r of received) resources.set(resourceKey(r.type, r.name), r);
  for (const r of message.removed) resources.delete(resourceKey(r.type, r.name));
  return applyResult(resources, config, message, outcome, unparsed);
}

async function applied0(
  apply: ApplyConfig,
  config: FleetConfig,
  version: string,
  change?: FleetConfigChange,
): Promise<ApplyOutcome> {
  try {
    return await apply(config, version, change);
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

function applyResult(
  resources: Map<string, ReceivedResource>,
  config: FleetConfig,
  message: ServerMessage,
  outcome: Extract<ApplyOutcome, { ok: true }>,
  unparsed: RejectedResource[],
): UpdateResult {
  const rejected = [...unparsed, ...(outcome.rejected ?? [])];
  const refused = new Set(rejected.filter((r) => r.type === 'gateways').map((r) => r.name));
  return {
    ok: true,
    rejected,
    applied: {
      resources,
      config,
      version: message.version,
      listenerErrors: outcome.listenerErrors,
      rejected,
    },
    ack: {
      version: message.version,
      nonce: message.nonce,
      listenerErrors: outcome.listenerErrors,
      appliedGateways: config.gateways
        .filter((g) => !refused.has(g.name))
        .map((g) => ({ name: g.name, generation: g.generation })),
      rejectedResources: rejected,
    },
  };
}

/**
 * One received body parsed; one that does not parse is refused alone, as the proxy refuses a resource that fails
 * validation: its last good version (if any) stays, everything else of the update applies.
 */
function parsedOrLastGood(
  applied: AppliedState,
  resource: ServerMessage['resources'][number],
  unparsed: RejectedResource[],
): ReceivedResource | undefined {
  try {
    return parseResource(resource.type, resource.name, resource.body);
  } catch (error) {
    unparsed.push({ type: resource.type, name: resource.name, error: (error as Error).message });
    return applied.resources.get(resourceKey(resource.type, resource.name));
  }
}

/** The resources the proxy would serve after a full message, and which did not parse. */
function candidateResources(applied: AppliedState, message: ServerMessage) {
  const candidate = message.full ? new Map<string, ReceivedResource>() : new Map(applied.resources);
  const unparsed: RejectedResource[] = [];
  for (const resource of message.resources) {
    const key = resourceKey(resource.type, resource.name);
    const parsed = parsedOrLastGood(applied, resource, unparsed);
    if (parsed === undefined) candidate.delete(key);
    else candidate.set(key, parsed);
  }
  for (const key of message.removed) candidate.delete(resourceKey(key.type, key.name));
  return { candidate, unparsed };
}

function uniqueKeys(message: ServerMessage): boolean {
  const keys = new Set<string>();
  for (const r of [...message.resources, ...message.removed]) keys.add(resourceKey(r.type, r.name));
  return keys.size === message.resources.length + message.removed.length;
}

function sameResources(a: Map<string, ReceivedResource>, b: Map<string, ReceivedResource>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, resource] of a) if (b.get(key)?.json !== resource.json) return false;
  return true;
}

// The proxy's side of one discovery update: a full or delta message turned into a whole FleetConfig on top of
// what the proxy applied, applied (or found unchanged), and answered with the Ack or Nack it earns. A resource
// whose body does not parse is refused alone; the rest of the update still applies.
import { FLEET_CONFIG_SCHEMA_VERSION, type FleetConfig } from '../ir/fleet-config.js';
import { patchFleetConfig } from '../ir/fleet-config-patch.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import type { Ack, ServerMessage } from './protocol.js';
import { assembleFleetConfig, parseResource, type ReceivedResource, resourceKey } from './resources.js';

/** A resource refused alone: the proxy keeps its last good version (or leaves a new one out). */
export interface RejectedResource {
  type: string;
  name: string;
  error: string;
}

export type ApplyOutcome =
  | { ok: true; listenerErrors: { listener: string; message: string }[]; rejected?: RejectedResource[] }
  | { ok: false; error: string };

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

export async function applyUpdate(
  fleet: string,
  applied: AppliedState,
  message: ServerMessage,
  apply: (config: FleetConfig, version: string) => Promise<ApplyOutcome>,
  trace?: StageTrace,
): Promise<UpdateResult> {
  if (message.schemaVersion !== FLEET_CONFIG_SCHEMA_VERSION) {
    const error = `fleet config schema version ${message.schemaVersion} is not supported (this proxy: ${FLEET_CONFIG_SCHEMA_VERSION})`;
    return { ok: false, error };
  }
  const { candidate, received, unparsed } = candidateResources(applied, message);
  // A delta names each resource once (a repeat would make the patch and the candidate disagree): else assemble.
  const config =
    message.full || applied.config === undefined || !uniqueKeys(message)
      ? assembleFleetConfig(fleet, candidate.values())
      : patchFleetConfig(applied.config, received, message.removed);
  trace?.('proxy-assembled', message.version);

  let outcome: ApplyOutcome;
  if (message.full && applied.version !== undefined && sameResources(candidate, applied.resources)) {
    // A resync after reconnecting that brings nothing new: keep serving, don't rebuild.
    outcome = { ok: true, listenerErrors: applied.listenerErrors, rejected: applied.rejected };
  } else {
    try {
      outcome = await apply(config, message.version);
    } catch (error) {
      outcome = { ok: false, error: (error as Error).message };
    }
  }
  if (!outcome.ok) return outcome;
  trace?.('proxy-applied', message.version);
  const rejected = [...unparsed, ...(outcome.rejected ?? [])];
  const refused = new Set(rejected.filter((r) => r.type === 'gateways').map((r) => r.name));
  return {
    ok: true,
    rejected,
    applied: {
      resources: candidate,
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

/** The resources the proxy would serve after the message, which of them it brought, and which did not parse. */
function candidateResources(applied: AppliedState, message: ServerMessage) {
  const candidate = message.full ? new Map<string, ReceivedResource>() : new Map(applied.resources);
  const received: ReceivedResource[] = [];
  // A body that does not parse is refused alone, as the proxy refuses a resource that fails validation: the
  // last good version (if any) stays, everything else of the update applies.
  const unparsed: RejectedResource[] = [];
  for (const resource of message.resources) {
    const key = resourceKey(resource.type, resource.name);
    try {
      const parsed = parseResource(resource.type, resource.name, resource.body);
      candidate.set(key, parsed);
      received.push(parsed);
    } catch (error) {
      unparsed.push({ type: resource.type, name: resource.name, error: (error as Error).message });
      const lastGood = applied.resources.get(key);
      if (lastGood === undefined) candidate.delete(key);
      else {
        candidate.set(key, lastGood);
        received.push(lastGood);
      }
    }
  }
  for (const key of message.removed) candidate.delete(resourceKey(key.type, key.name));
  return { candidate, received, unparsed };
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

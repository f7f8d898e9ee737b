// Which streams follow which fleet, and what each fleet's streams are sent: everything on subscribe (once the
// fleet is known), then on each change only the changed and removed resources — or everything again to a stream
// whose proxy rejected a version and now ignores deltas.
import { FLEET_CONFIG_SCHEMA_VERSION, FLEET_RESOURCE_TYPES, type FleetConfig } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import type { Logger } from '../platform/log-line.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import type { ServerMessage } from './protocol.js';
import { type ResourceDelta, type ServedResourceSet, updateResourceSet } from './resources.js';
import type { Stream } from './server-streams.js';

interface Fleet {
  /** False until setFleet provides it (and again after removeFleet): its streams wait. */
  known: boolean;
  version: number;
  /** Updated in place by setFleet; full messages list it in resource type order. */
  resources: ServedResourceSet;
  /** The config `resources` was last updated from (its unchanged lists and objects are skipped next time). */
  config?: FleetConfig;
  streams: Set<Stream>;
}

export interface FleetSubscriptions {
  /** Whether a live stream of `fleet` already claims `node`. */
  hasNode(fleet: string, node: string): boolean;
  /** Adds the stream to its fleet (`state.fleet`) and sends it everything if the fleet is known; returns that. */
  subscribe(stream: Stream): boolean;
  unsubscribe(stream: Stream): void;
  /** After a Nack of `version`: everything again when there is something newer, else once there is. */
  resendAfterNack(stream: Stream, version: string): void;
  /** `change`: how `config` differs from the fleet's last config, when its producer knows. */
  setFleet(config: FleetConfig, change?: FleetConfigChange): void;
  removeFleet(name: string): void;
}

export function createFleetSubscriptions(log: Logger, trace?: StageTrace): FleetSubscriptions {
  const fleets = new Map<string, Fleet>();
  // One counter for all fleets: versions stay monotonic even when a fleet is removed and comes back. It starts
  // from the clock, so a proxy that outlives its controller never sees one version name two configs.
  let versionCounter = Date.now();
  const nonces = { last: 0 };
  const message = (fleet: Fleet, full: boolean, delta?: ResourceDelta) =>
    fleetMessage(fleet, nonces, full, delta);

  function fleetState(name: string): Fleet {
    let fleet = fleets.get(name);
    if (fleet === undefined) {
      fleet = { known: false, version: 0, resources: new Map(), streams: new Set() };
      fleets.set(name, fleet);
    }
    return fleet;
  }

  return {
    hasNode(name, node) {
      const fleet = fleets.get(name);
      if (fleet === undefined) return false;
      for (const other of fleet.streams) if (!other.closed && other.state.node === node) return true;
      return false;
    },
    subscribe(stream) {
      const fleet = fleetState(stream.state.fleet);
      stream.subscribed = true;
      fleet.streams.add(stream);
      if (fleet.known) send(stream, message(fleet, true));
      return fleet.known;
    },
    unsubscribe(stream) {
      const fleet = fleets.get(stream.state.fleet);
      fleet?.streams.delete(stream);
      if (fleet !== undefined && !fleet.known && fleet.streams.size === 0) fleets.delete(stream.state.fleet);
    },
    resendAfterNack(stream, version) {
      // The proxy now ignores deltas; send everything when there is something newer than what it rejected
      // (once per version: a full message of the current version is already on its way otherwise).
      const fleet = fleets.get(stream.state.fleet);
      const current = String(fleet?.version);
      if (fleet?.known && current !== version) {
        if (stream.fullSentVersion !== current) send(stream, message(fleet, true));
      } else stream.needsFull = true;
    },
    setFleet(config, change) {
      const fleet = fleetState(config.fleet);
      const wasKnown = fleet.known;
      const delta = updateResourceSet(fleet.resources, config, fleet.config, change);
      fleet.config = config;
      if (wasKnown && delta.changed.length === 0 && delta.removed.length === 0) return;
      fleet.version = ++versionCounter;
      fleet.known = true;
      log.debug(
        `discovery: fleet ${config.fleet} version ${fleet.version}: ${delta.changed.length} changed, ${delta.removed.length} removed`,
      );
      trace?.('discovery-diffed', String(fleet.version));
      let deltaMessage: ServerMessage | undefined;
      for (const stream of fleet.streams) {
        if (!wasKnown || stream.needsFull) send(stream, message(fleet, true));
        else {
          deltaMessage ??= message(fleet, false, delta);
          send(stream, deltaMessage);
        }
      }
    },
    removeFleet(name) {
      const fleet = fleets.get(name);
      if (fleet === undefined) return;
      // Its proxies stay connected and keep their last config; they get everything if the fleet returns.
      fleet.known = false;
      fleet.resources = new Map();
      delete fleet.config;
      if (fleet.streams.size === 0) fleets.delete(name);
    },
  };
}

/** Everything the fleet has (full), or the delta's changed and removed resources. */
function fleetMessage(
  fleet: Fleet,
  nonces: { last: number },
  full: boolean,
  delta?: ResourceDelta,
): ServerMessage {
  const resources = full ? inTypeOrder([...fleet.resources.values()]) : (delta?.changed ?? []);
  return {
    version: String(fleet.version),
    nonce: String(++nonces.last),
    full,
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    resources: resources.map((r) => ({ type: r.type, name: r.name, body: Buffer.from(r.json, 'utf8') })),
    removed: full ? [] : (delta?.removed ?? []),
  };
}

function send(stream: Stream, payload: ServerMessage): void {
  if (stream.closed) return;
  if (payload.full) {
    stream.needsFull = false;
    stream.fullSentVersion = payload.version;
  }
  stream.call.write(payload);
}

/** Resources grouped by type in dependency order (stable within a type). */
function inTypeOrder<T extends { type: (typeof FLEET_RESOURCE_TYPES)[number] }>(resources: T[]): T[] {
  return resources.sort(
    (a, b) => FLEET_RESOURCE_TYPES.indexOf(a.type) - FLEET_RESOURCE_TYPES.indexOf(b.type),
  );
}

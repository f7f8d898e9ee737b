// What the proxies told the other controller replicas. Every replica serves discovery, so a proxy may be
// connected to a replica that is not the leader: the leader polls each peer's /dataplane so that its Programmed
// verdicts count every proxy's Acks, not only those of its own streams.
import { get } from 'node:http';
import type { ResourceSnapshot } from '../../api/snapshot.js';
import type { NodeState } from '../../discovery/server.js';
import { CONTROLLER_SERVICE, PORTS } from '../../ir/well-known.js';
import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';

export const DATA_PLANE_PATH = '/dataplane';

export interface DataPlaneReport {
  /** The replica that answers (its lease identity), so a replica can skip itself among the peers. */
  identity: string;
  nodes: NodeState[];
}

export interface PeerDataPlaneOptions {
  identity: string;
  /** `host:port` of every replica's HTTP endpoint (itself included or not). */
  peers(): string[];
  onChange(): void;
  log: Logger;
  /** The `authorization` header the peers' /dataplane asks of a replica. */
  credential(): string;
  /** Default 1000. */
  intervalMs?: number;
  /** Default 2000. */
  timeoutMs?: number;
  /**
   * Failed polls in a row after which a peer that is still listed loses its last report (default 3): one
   * slow or lost answer must not uncount its proxies and flip their Gateways' Programmed.
   */
  keepReportPolls?: number;
}

export interface PeerDataPlane {
  start(): void;
  stop(): void;
  /**
   * The nodes the peers reported last. A listed peer that stops answering keeps its last report for
   * `keepReportPolls` polls, then reports none; a peer no longer listed reports none at once.
   */
  nodes(): NodeState[];
}

const DEFAULTS = { intervalMs: 1000, timeoutMs: 2000, keepReportPolls: 3 } as const;
const HTTP_PORT_NAME = 'http';

/** `ip:port` of the HTTP endpoint of every ready replica behind the controller Service. */
export function replicaAddresses(
  snapshot: Pick<ResourceSnapshot, 'endpointSlices'>,
  controllerNamespace: string,
): string[] {
  const out: string[] = [];
  for (const slice of snapshot.endpointSlices) {
    const labels = slice.metadata.labels ?? {};
    if (
      slice.metadata.namespace !== controllerNamespace ||
      labels['kubernetes.io/service-name'] !== CONTROLLER_SERVICE
    ) {
      continue;
    }
    const port = slice.ports.find((p) => p.name === HTTP_PORT_NAME)?.port ?? PORTS.controllerHttp;
    for (const endpoint of slice.endpoints) {
      if (endpoint.conditions.ready === false) continue;
      for (const ip of endpoint.addresses) out.push(ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);
    }
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseNode(value: unknown): NodeState | undefined {
  if (!isRecord(value)) return undefined;
  const { stream, node, fleet, connectedAt, appliedVersion, appliedGateways, listenerErrors } = value;
  if (typeof node !== 'string' || typeof fleet !== 'string' || !isRecord(appliedGateways)) return undefined;
  const gateways: Record<string, number> = {};
  for (const [key, generation] of Object.entries(appliedGateways)) {
    if (typeof generation === 'number') gateways[key] = generation;
  }
  const errors = (Array.isArray(listenerErrors) ? listenerErrors : []).flatMap((e) =>
    isRecord(e) && typeof e.listener === 'string' && typeof e.message === 'string'
      ? [{ listener: e.listener, message: e.message }]
      : [],
  );
  return {
    stream: typeof stream === 'number' ? stream : 0,
    node,
    fleet,
    connectedAt: typeof connectedAt === 'string' ? connectedAt : '',
    ...(typeof appliedVersion === 'string' ? { appliedVersion } : {}),
    appliedGateways: gateways,
    listenerErrors: errors,
  };
}

/** A /dataplane body, or an error naming what is wrong with it. */
export function parseDataPlaneReport(text: string): DataPlaneReport {
  const value: unknown = JSON.parse(text);
  if (!isRecord(value) || typeof value.identity !== 'string' || !Array.isArray(value.nodes)) {
    throw new PorticoError('E_PEER_REPORT', 'not a data plane report: expected {identity, nodes[]}');
  }
  const nodes: NodeState[] = [];
  for (const [i, raw] of value.nodes.entries()) {
    const node = parseNode(raw);
    if (node === undefined) {
      throw new PorticoError('E_PEER_REPORT', `nodes[${i}]: expected {node, fleet, appliedGateways}`);
    }
    nodes.push(node);
  }
  return { identity: value.identity, nodes };
}

function fetchReport(address: string, credential: string, timeoutMs: number): Promise<DataPlaneReport> {
  return new Promise((resolve, reject) => {
    const target = `http://${address}${DATA_PLANE_PATH}`;
    const headers = { authorization: credential };
    const req = get(target, { timeout: timeoutMs, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode !== 200) {
          reject(new PorticoError('E_PEER_REPORT', `HTTP ${res.statusCode}`));
          return;
        }
        try {
          resolve(parseDataPlaneReport(Buffer.concat(chunks).toString('utf8')));
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('timeout', () =>
      req.destroy(new PorticoError('E_PEER_REPORT', `no answer within ${timeoutMs} ms`)),
    );
    req.on('error', reject);
  });
}

export function createPeerDataPlane(options: PeerDataPlaneOptions): PeerDataPlane {
  const intervalMs = options.intervalMs ?? DEFAULTS.intervalMs;
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const keepReportPolls = options.keepReportPolls ?? DEFAULTS.keepReportPolls;
  // Peer address → its last report as JSON (to tell changes) and its nodes.
  let reports = new Map<string, { json: string; nodes: NodeState[] }>();
  // Peer address → failed polls in a row.
  const failing = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let generation = 0;

  async function poll(run: number): Promise<void> {
    const next = new Map<string, { json: string; nodes: NodeState[] }>();
    const addresses = options.peers();
    await Promise.all(
      addresses.map(async (address) => {
        try {
          const report = await fetchReport(address, options.credential(), timeoutMs);
          if (failing.delete(address)) options.log.info(`peers: ${address} answers again`);
          if (report.identity === options.identity) return;
          next.set(address, { json: JSON.stringify(report.nodes), nodes: report.nodes });
        } catch (error) {
          const failures = (failing.get(address) ?? 0) + 1;
          if (failures === 1) options.log.warn(`peers: ${address}: ${(error as Error).message}`);
          failing.set(address, failures);
          // Past the allowance its proxies count as unknown until they reconnect to a replica that answers.
          const last = reports.get(address);
          if (last !== undefined && failures <= keepReportPolls) next.set(address, last);
        }
      }),
    );
    // A peer no longer listed (gone, or not ready) is forgotten, failures and all.
    const listed = new Set(addresses);
    for (const address of failing.keys()) if (!listed.has(address)) failing.delete(address);
    if (!running || run !== generation) return;
    const changed =
      next.size !== reports.size || [...next].some(([address, r]) => reports.get(address)?.json !== r.json);
    reports = next;
    if (changed) options.onChange();
    timer = setTimeout(() => void poll(run), intervalMs);
  }

  return {
    start() {
      if (running) return;
      running = true;
      void poll(++generation);
    },
    stop() {
      running = false;
      generation++;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (reports.size > 0) {
        reports = new Map();
        options.onChange();
      }
    },
    nodes: () => [...reports.values()].flatMap((r) => r.nodes),
  };
}

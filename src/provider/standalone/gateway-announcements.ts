// The lines a person running standalone sees about Gateways: programmed at an address, or why not, and the
// listeners with problems. Only transitions are news.

import type { Logger } from '../../platform/log-line.js';
import type { ObjectStatus } from '../../translate/index.js';

// Reasons that only mean "the proxy is on its way", not a problem to report.
const WAITING = new Set(['Pending', 'AddressNotAssigned']);

interface StatusCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

interface GatewayStatus {
  conditions?: StatusCondition[];
  addresses?: { value: string }[];
  listeners?: { name: string; conditions?: StatusCondition[] }[];
}

export interface GatewayAnnouncements {
  /** Logs what changed since the last call; `statuses` is every object's current status. */
  announce(statuses: Iterable<ObjectStatus>): void;
}

function gatewayLines(s: ObjectStatus): { lines: string[]; waiting: boolean } {
  const status = s.status as GatewayStatus;
  const programmed = status.conditions?.find((c) => c.type === 'Programmed');
  const line =
    programmed?.status === 'True'
      ? `Gateway ${s.namespace}/${s.name} programmed at ${status.addresses?.[0]?.value ?? '?'}`
      : `Gateway ${s.namespace}/${s.name} not programmed: ${programmed?.reason ?? 'Unknown'}: ${programmed?.message ?? ''}`;
  const listenerProblems = (status.listeners ?? []).flatMap((l) =>
    (l.conditions ?? [])
      .filter((c) => c.status !== (c.type === 'Conflicted' ? 'False' : 'True') && !WAITING.has(c.reason))
      .map((c) => `  listener ${l.name}: ${c.type}=${c.status}: ${c.reason}: ${c.message}`),
  );
  // AddressNotAssigned naming an entry of spec.addresses is an address that cannot be had, not one on its way.
  const unmet = programmed?.message.startsWith('spec.addresses[') === true;
  const waiting =
    programmed !== undefined && WAITING.has(programmed.reason) && !unmet && listenerProblems.length === 0;
  return { lines: [line, ...listenerProblems], waiting };
}

export function createGatewayAnnouncements(log: Logger): GatewayAnnouncements {
  const announced = new Map<string, string>();
  return {
    announce(statuses) {
      const current = new Set<string>();
      for (const s of statuses) {
        if (s.kind !== 'Gateway') continue;
        const key = `${s.namespace}/${s.name}`;
        current.add(key);
        const { lines, waiting } = gatewayLines(s);
        const text = lines.join('\n');
        if (announced.get(key) === text) continue;
        // A Gateway waiting for its first proxy is not worth a line.
        if (waiting && announced.get(key) === undefined) continue;
        announced.set(key, text);
        // One call per line: the log escapes line breaks inside a line (quoted values must not forge lines).
        for (const l of lines) log.info(l);
      }
      for (const key of announced.keys()) if (!current.has(key)) announced.delete(key);
    },
  };
}

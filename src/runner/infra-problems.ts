// Infrastructure a provider could not create: the fleet's Gateways say so instead of waiting forever.

import type { FleetInfra } from '../ir/fleet-infra.js';
import type { ObjectStatus } from '../translate/index.js';

/** Why a fleet's infrastructure is not there: a condition reason and a message a person can act on. */
export interface InfraProblem {
  reason: string;
  message: string;
}

interface Condition {
  type?: unknown;
}

/** Each Gateway's status with `Programmed=False` (the problem's reason and message) where its fleet's infrastructure failed. */
export function withInfraProblems(
  statuses: readonly ObjectStatus[],
  infra: readonly FleetInfra[],
  problems: ReadonlyMap<string, InfraProblem>,
): readonly ObjectStatus[] {
  if (problems.size === 0) return statuses;
  const gatewayFleet = new Map<string, string>();
  for (const i of infra) for (const g of i.gateways) gatewayFleet.set(g, i.fleet);
  return statuses.map((s) => {
    if (s.kind !== 'Gateway') return s;
    const fleet = gatewayFleet.get(s.namespace === undefined ? s.name : `${s.namespace}/${s.name}`);
    const problem = fleet === undefined ? undefined : problems.get(fleet);
    return problem === undefined ? s : withProblem(s, problem);
  });
}

function withProblem(s: ObjectStatus, problem: InfraProblem): ObjectStatus {
  const conditions = ((s.status.conditions ?? []) as Condition[]).map((c) =>
    c.type === 'Programmed' ? { ...c, status: 'False', reason: problem.reason, message: problem.message } : c,
  );
  return { ...s, status: { ...s.status, conditions } };
}

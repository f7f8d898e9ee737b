// Access rules: allow or deny by client address, method and headers; the first rule that matches decides, else the
// default action. A refusal is 403 with no detail; the rule's name goes to the access log and metrics.
import { BlockList, isIPv4 } from 'node:net';
import type { AccessRuleConfig } from '../../ir/fleet-config.js';
import type { AccessRequest } from './request-view.js';
import type { AccessStep, StepOutcome } from './step.js';

interface CompiledRule {
  name: string;
  allow: boolean;
  clients: BlockList | undefined;
  methods: ReadonlySet<string> | undefined;
  headers: readonly { name: string; value?: string }[];
}

function clientList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const slash = cidr.indexOf('/');
    const address = cidr.slice(0, slash);
    list.addSubnet(address, Number(cidr.slice(slash + 1)), isIPv4(address) ? 'ipv4' : 'ipv6');
  }
  return list;
}

function compileRule(r: AccessRuleConfig): CompiledRule {
  return {
    name: r.name,
    allow: r.action === 'Allow',
    clients: r.clientCidrs === undefined ? undefined : clientList(r.clientCidrs),
    methods: r.methods === undefined ? undefined : new Set(r.methods),
    headers: r.headers ?? [],
  };
}

function matches(rule: CompiledRule, req: AccessRequest): boolean {
  if (rule.methods !== undefined && !rule.methods.has(req.method)) return false;
  if (rule.clients !== undefined) {
    const address = req.clientAddress;
    if (!rule.clients.check(address, isIPv4(address) ? 'ipv4' : 'ipv6')) return false;
  }
  for (const h of rule.headers) {
    const value = req.header(h.name);
    if (value === undefined || (h.value !== undefined && value !== h.value)) return false;
  }
  return true;
}

export function accessRulesStep(
  rules: readonly AccessRuleConfig[],
  defaultAction: 'Allow' | 'Deny',
): AccessStep {
  const compiled = rules.map(compileRule);
  const outcome = (name: string, allow: boolean): StepOutcome =>
    allow
      ? { allow: true, rule: name }
      : { allow: false, status: 403, rule: name, reason: `denied by ${name}` };
  const byDefault = outcome('default', defaultAction === 'Allow');
  const decided = compiled.map((r) => outcome(r.name, r.allow));
  return {
    check: (req) => {
      for (let i = 0; i < compiled.length; i++) if (matches(compiled[i]!, req)) return decided[i]!;
      return byDefault;
    },
  };
}

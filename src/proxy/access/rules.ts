// Access rules: allow or deny by client address, method and headers; the first rule that matches decides, else the
// default action. A refusal is 403 with no detail; the rule's name goes to the access log and metrics.
import { BlockList, isIPv4 } from 'node:net';
import type { AccessRuleConfig } from '../../ir/fleet-config.js';
import type { AccessRequest } from './request-view.js';
import type { AccessContext, AccessStep, StepOutcome } from './step.js';

interface CompiledRule {
  name: string;
  allow: boolean;
  clients: BlockList | undefined;
  methods: ReadonlySet<string> | undefined;
  headers: readonly { name: string; value?: string }[];
  claims: readonly { name: string; values: readonly string[] }[];
  scopes: readonly string[];
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
    claims: r.claims ?? [],
    scopes: r.scopes ?? [],
  };
}

/** A claim's values as strings (a list's items, or the one value). */
function claimValues(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : v === undefined || v === null ? [] : [String(v)];
}

/** The scopes of verified claims: `scope` (space-separated) or `scp` (a list or a string). */
function scopesOf(claims: Readonly<Record<string, unknown>>): Set<string> {
  const scope = claims.scope ?? claims.scp;
  return new Set(typeof scope === 'string' ? scope.split(' ').filter((s) => s !== '') : claimValues(scope));
}

function claimsMatch(rule: CompiledRule, claims: Readonly<Record<string, unknown>> | undefined): boolean {
  if (rule.claims.length === 0 && rule.scopes.length === 0) return true;
  if (claims === undefined) return false;
  for (const c of rule.claims)
    if (!claimValues(claims[c.name]).some((v) => c.values.includes(v))) return false;
  if (rule.scopes.length === 0) return true;
  const held = scopesOf(claims);
  return rule.scopes.every((s) => held.has(s));
}

function matches(rule: CompiledRule, req: AccessRequest, context: AccessContext): boolean {
  if (!claimsMatch(rule, context.claims)) return false;
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
    check: (req, context) => {
      for (let i = 0; i < compiled.length; i++) if (matches(compiled[i]!, req, context)) return decided[i]!;
      return byDefault;
    },
  };
}

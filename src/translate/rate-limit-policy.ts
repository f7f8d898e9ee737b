// A RateLimitPolicy's settings: a route's rateLimits (the proxy's limiter, src/proxy/limits/), with its Redis
// resolved from a Service and its password and CA from Secrets.
import { periodSeconds, type RateLimitPolicy } from '../api/rate-limit-policy.js';
import { durationMs } from '../api/semantic-rules.js';
import {
  fleetPolicyName,
  type RateLimitKey,
  type RateLimitRule,
  type RedisConnection,
} from '../ir/fleet-config.js';
import { policySecret } from './access-policy.js';
import { serviceOf } from './backends.js';
import type { SnapshotLookup } from './lookup.js';
import { secretValue } from './secrets.js';
import type { CompiledPolicy } from './types.js';

/** How long a lease may wait for Redis when the policy does not say. */
export const DEFAULT_REDIS_TIMEOUT_MS = 100;
/** The Secret keys the password and the CA bundle are read from. */
export const REDIS_PASSWORD_KEY = 'password';
export const REDIS_CA_KEY = 'ca.crt';
/** The proxy's longest Redis timeout (src/ir/validate.ts). */
const MAX_REDIS_TIMEOUT_MS = 60_000;

/**
 * `host:port` of the Service's Redis: its cluster IP (on Kubernetes), else its one ready endpoint (standalone,
 * where a Service has no cluster IP and an EndpointSlice names the address, or a headless Service).
 */
function redisAddress(
  p: RateLimitPolicy,
  lookup: SnapshotLookup,
  problems: string[],
): { address: string; host: string } | undefined {
  const ref = p.spec.redis!.serviceRef;
  const ns = p.metadata.namespace ?? '';
  const backendRef = { group: '', kind: 'Service', name: ref.name, port: ref.port, namespace: ref.namespace };
  const found = serviceOf(
    backendRef,
    { group: 'gateway.portico.io', kind: 'RateLimitPolicy', namespace: ns },
    lookup,
  );
  if ('reason' in found) {
    problems.push(`spec.redis.serviceRef: ${found.message}`);
    return undefined;
  }
  const svcNs = found.service.metadata.namespace ?? '';
  const host = `${ref.name}.${svcNs}.svc`;
  const clusterIp = found.service.spec.clusterIP;
  if (clusterIp !== undefined && clusterIp !== '' && clusterIp !== 'None')
    return {
      address: clusterIp.includes(':') ? `[${clusterIp}]:${ref.port}` : `${clusterIp}:${ref.port}`,
      host,
    };
  const portName = found.service.spec.ports.find((sp) => sp.port === ref.port)?.name ?? '';
  const endpoints = new Set<string>();
  for (const slice of lookup.slices.get(`${svcNs}/${ref.name}`) ?? []) {
    const port = slice.ports.find((sp) => sp.name === portName && sp.protocol === 'TCP')?.port;
    if (port === undefined) continue;
    for (const e of slice.endpoints)
      if (e.conditions.ready !== false)
        for (const a of e.addresses) endpoints.add(a.includes(':') ? `[${a}]:${port}` : `${a}:${port}`);
  }
  // One counter must live in one Redis: several endpoints without a cluster IP would split it.
  if (endpoints.size !== 1) {
    problems.push(
      `spec.redis.serviceRef: Service ${svcNs}/${ref.name} has no cluster IP and ${endpoints.size} ready endpoints (one is needed)`,
    );
    return undefined;
  }
  return { address: [...endpoints][0]!, host };
}

/** A Secret's key, or a problem naming the field. */
function secretKey(
  p: RateLimitPolicy,
  ref: { name: string; namespace?: string },
  key: string,
  at: string,
  lookup: SnapshotLookup,
  problems: string[],
): string | undefined {
  const found = policySecret(p, ref, lookup);
  if ('problem' in found) {
    problems.push(`${at}: ${found.problem}`);
    return undefined;
  }
  const value = secretValue(found.secret, key);
  if (value === undefined || value === '') problems.push(`${at}: the Secret has no key ${key}`);
  return value === '' ? undefined : value;
}

function redisConnection(
  p: RateLimitPolicy,
  lookup: SnapshotLookup,
  problems: string[],
): RedisConnection | undefined {
  const spec = p.spec.redis;
  if (spec === undefined) return undefined;
  const before = problems.length;
  const target = redisAddress(p, lookup, problems);
  const ms = spec.timeout === undefined ? DEFAULT_REDIS_TIMEOUT_MS : durationMs(spec.timeout);
  if (ms === undefined || ms < 1 || ms > MAX_REDIS_TIMEOUT_MS)
    problems.push(`spec.redis.timeout: must be from 1ms to ${MAX_REDIS_TIMEOUT_MS / 1000}s`);
  const out: RedisConnection = {
    address: target?.address ?? '',
    failureMode: spec.failureMode ?? 'Open',
    timeoutMs: ms ?? DEFAULT_REDIS_TIMEOUT_MS,
  };
  if (spec.passwordSecretRef !== undefined) {
    const at = 'spec.redis.passwordSecretRef';
    const password = secretKey(p, spec.passwordSecretRef, REDIS_PASSWORD_KEY, at, lookup, problems);
    if (password !== undefined) out.password = password;
  }
  if (spec.tls !== undefined) {
    out.tls = { serverName: spec.tls.serverName ?? target?.host ?? '' };
    const ca = spec.tls.caSecretRef;
    const caPem =
      ca === undefined
        ? undefined
        : secretKey(p, ca, REDIS_CA_KEY, 'spec.redis.tls.caSecretRef', lookup, problems);
    if (caPem !== undefined) out.tls.caPem = caPem;
  }
  return problems.length === before ? out : undefined;
}

function ruleKeys(keys: RateLimitPolicy['spec']['rules'][number]['keys']): RateLimitKey[] {
  return (keys ?? []).map((k): RateLimitKey => {
    if (k.type === 'Header') return { type: 'Header', name: (k.name ?? '').toLowerCase() };
    if (k.type === 'Claim') return { type: 'Claim', name: k.name ?? '' };
    return { type: k.type };
  });
}

/**
 * The policy's rules. A Redis that cannot be used (its Service, port, Secret or CA missing) makes the policy
 * Invalid and its Global rules Local with the same numbers: every proxy still holds the limit by itself (never
 * no limit at all), and a typo in a Secret's name does not refuse the whole edge (docs/limits.md).
 */
export function compileRateLimitPolicy(p: RateLimitPolicy, lookup: SnapshotLookup): CompiledPolicy {
  const ns = p.metadata.namespace ?? '';
  const problems: string[] = [];
  const needsRedis = p.spec.rules.some((r) => r.scope === 'Global');
  const redis = needsRedis ? redisConnection(p, lookup, problems) : undefined;
  const rateLimits = p.spec.rules.map((r): RateLimitRule => {
    const rule: RateLimitRule = {
      name: `${ns}/${p.metadata.name}/${r.name}`,
      keys: ruleKeys(r.keys),
      limit: r.requests,
      // The schema and the CRD refuse any other period; a minute stands in should one pass.
      periodSeconds: periodSeconds(r.period) ?? 60,
      scope: r.scope === 'Global' && redis !== undefined ? 'Global' : 'Local',
    };
    if (rule.scope === 'Global') rule.redis = redis!;
    return rule;
  });
  const name = fleetPolicyName('RateLimitPolicy', ns, p.metadata.name);
  const settings = { route: { rateLimits } };
  return problems.length === 0 ? { name, settings } : { name, settings, problem: problems.join('; ') };
}

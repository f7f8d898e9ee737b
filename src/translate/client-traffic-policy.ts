// A ClientTrafficPolicy's settings: the Listener's clientIp, proxyProtocol and limits, and a route's body limit
// (fields the proxy reads, docs/limits.md).
import type { ClientTrafficPolicy } from '../api/client-traffic-policy.js';
import { durationMs } from '../api/semantic-rules.js';
import { cidrProblem, MAX_TIMEOUT_MS, timeoutProblem } from '../ir/field-rules.js';
import { fleetPolicyName, type ListenerLimits } from '../ir/fleet-config.js';
import type { CompiledPolicy, PolicySettings } from './types.js';

/** How long a PROXY protocol header may take when the policy does not say. */
export const DEFAULT_PROXY_PROTOCOL_TIMEOUT_MS = 5000;
/** The longest the proxy waits for a PROXY protocol header (src/ir/validate.ts). */
const MAX_PROXY_PROTOCOL_TIMEOUT_MS = 60_000;

/**
 * The CIDRs the proxy can use; one it cannot is left out (trusting fewer peers: fail closed) and said. A list left
 * empty trusts no one: no client address is believed, and a PROXY protocol listener takes no connection.
 */
function usableCidrs(cidrs: readonly string[], at: string, problems: string[]): string[] {
  return cidrs.filter((c, i) => {
    const why = cidrProblem(c);
    if (why !== undefined) problems.push(`${at}[${i}]: ${why}`);
    return why === undefined;
  });
}

/** A duration field in milliseconds, or undefined (and a problem) when the proxy cannot use it. */
function timeoutMs(
  text: string | undefined,
  at: string,
  problems: string[],
  maxMs = MAX_TIMEOUT_MS,
): number | undefined {
  if (text === undefined) return undefined;
  const ms = durationMs(text);
  const why =
    ms === undefined || ms < 1
      ? 'must be at least 1ms'
      : ms > maxMs
        ? `must be at most ${maxMs / 1000}s`
        : timeoutProblem(ms);
  if (why === undefined) return ms;
  problems.push(`${at}: ${why}`);
  return undefined;
}

function listenerLimits(p: ClientTrafficPolicy, problems: string[]): ListenerLimits | undefined {
  const l = p.spec.limits;
  if (l === undefined) return undefined;
  const out: ListenerLimits = {};
  if (l.maxRequestBodyBytes !== undefined) out.maxRequestBodyBytes = l.maxRequestBodyBytes;
  if (l.maxHeaderBytes !== undefined) out.maxHeaderBytes = l.maxHeaderBytes;
  if (l.maxHeaders !== undefined) out.maxHeaders = l.maxHeaders;
  if (l.maxConnections !== undefined) out.maxConnections = l.maxConnections;
  if (l.maxUdpFlows !== undefined) out.maxUdpFlows = l.maxUdpFlows;
  const flowIdle = timeoutMs(l.udpFlowIdleTimeout, 'spec.limits.udpFlowIdleTimeout', problems);
  if (flowIdle !== undefined) out.udpFlowIdleTimeoutMs = flowIdle;
  if (l.maxClientHelloBytes !== undefined) out.clientHelloMaxBytes = l.maxClientHelloBytes;
  const handshake = timeoutMs(l.tlsHandshakeTimeout, 'spec.limits.tlsHandshakeTimeout', problems);
  if (handshake !== undefined) out.tlsHandshakeTimeoutMs = handshake;
  const header = timeoutMs(l.headerTimeout, 'spec.limits.headerTimeout', problems);
  if (header !== undefined) out.headerTimeoutMs = header;
  const idle = timeoutMs(l.idleTimeout, 'spec.limits.idleTimeout', problems);
  if (idle !== undefined) out.idleTimeoutMs = idle;
  return out;
}

export function compileClientTrafficPolicy(p: ClientTrafficPolicy): CompiledPolicy {
  const problems: string[] = [];
  const listener: NonNullable<PolicySettings['listener']> = {};
  const ip = p.spec.clientIP;
  if (ip !== undefined) {
    listener.clientIp = {
      trustedCidrs: usableCidrs(ip.trustedCIDRs, 'spec.clientIP.trustedCIDRs', problems),
    };
    if (ip.trustedHops !== undefined) listener.clientIp.trustedHops = ip.trustedHops;
    if (ip.header !== undefined) listener.clientIp.header = ip.header.toLowerCase();
  }
  const pp = p.spec.proxyProtocol;
  if (pp !== undefined)
    listener.proxyProtocol = {
      trustedCidrs: usableCidrs(pp.trustedCIDRs, 'spec.proxyProtocol.trustedCIDRs', problems),
      // An unusable timeout keeps the default: the header is still required.
      timeoutMs:
        timeoutMs(pp.timeout, 'spec.proxyProtocol.timeout', problems, MAX_PROXY_PROTOCOL_TIMEOUT_MS) ??
        DEFAULT_PROXY_PROTOCOL_TIMEOUT_MS,
    };
  const limits = listenerLimits(p, problems);
  if (limits !== undefined) listener.limits = limits;
  const settings: PolicySettings = { listener };
  const body = p.spec.limits?.maxRequestBodyBytes;
  if (body !== undefined) settings.route = { maxRequestBodyBytes: body };
  const name = fleetPolicyName('ClientTrafficPolicy', p.metadata.namespace ?? '', p.metadata.name);
  return problems.length === 0 ? { name, settings } : { name, settings, problem: problems.join('; ') };
}

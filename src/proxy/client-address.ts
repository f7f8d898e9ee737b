// Who the client is (ir ClientIpPolicy): behind a load balancer or CDN the peer is a proxy, and the client is what
// trusted peers report in x-forwarded-for or a header of their own. A peer outside the trusted CIDRs is the client
// itself, whatever it sends. The address found replaces the request's client facts once, at its start, so that the
// forwarding headers, the access log, tracing, rate-limit keys and access rules all read the same one:
// clientIpOf (exchange.ts).
import { BlockList, isIP } from 'node:net';
import type { ClientIpPolicy } from '../ir/fleet-config.js';
import { type ClientFacts, type ClientRequest, originOf } from './exchange.js';
import { clientIp } from './wire/headers.js';

/** A ClientIpPolicy made ready for requests: the CIDRs in a BlockList (one lookup per hop). */
export interface ClientIpRule {
  trusted: BlockList;
  trustedHops: number | undefined;
  /** Lower case. */
  header: string | undefined;
}

export function compileClientIpRule(policy: ClientIpPolicy): ClientIpRule {
  return {
    trusted: trustedBlockList(policy.trustedCidrs),
    trustedHops: policy.trustedHops,
    header: policy.header?.toLowerCase(),
  };
}

/** CIDRs (or single addresses) as one BlockList: one lookup per address. */
export function trustedBlockList(cidrs: readonly string[]): BlockList {
  const trusted = new BlockList();
  for (const cidr of cidrs) {
    const slash = cidr.indexOf('/');
    const address = slash < 0 ? cidr : cidr.slice(0, slash);
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    const prefix = slash < 0 ? (type === 'ipv6' ? 128 : 32) : Number(cidr.slice(slash + 1));
    trusted.addSubnet(address, prefix, type);
  }
  return trusted;
}

/** Whether `ip` (IPv4-mapped IPv6 unwrapped) is in `list`. */
export function inBlockList(list: BlockList, ip: string): boolean {
  const family = isIP(ip);
  return family !== 0 && list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}

function isTrusted(rule: ClientIpRule, ip: string): boolean {
  return inBlockList(rule.trusted, ip);
}

/** An address as a hop reported it: trimmed, IPv4-mapped IPv6 unwrapped; '' when it is no address. */
function hopAddress(text: string): string {
  const ip = clientIp(text.trim());
  return isIP(ip) === 0 ? '' : ip;
}

/** The client and the x-forwarded-for entries sent on before the peer ('' none), for a trusted peer. */
export interface FoundClient {
  ip: string;
  chain: string;
}

/**
 * The client a trusted peer's forwarding headers name: `forwardedFor` is the request's x-forwarded-for values
 * joined with `, `, `headerValue` the policy header's first value. Undefined when they name none that can be
 * believed (the peer is then the client).
 */
export function reportedClient(
  rule: ClientIpRule,
  forwardedFor: string | undefined,
  headerValue: string | undefined,
): FoundClient | undefined {
  if (rule.header !== undefined) {
    const ip = headerValue === undefined ? '' : hopAddress(headerValue);
    return ip === '' ? undefined : { ip, chain: ip };
  }
  if (forwardedFor === undefined) return undefined;
  const hops = forwardedFor.split(',').map(hopAddress);
  if (rule.trustedHops !== undefined) {
    const at = hops.length - rule.trustedHops;
    if (at < 0 || hops[at] === '') return undefined;
    return { ip: hops[at]!, chain: hops.slice(at).join(', ') };
  }
  // From the right, past every trusted hop: the first untrusted one is the client (garbage stops the walk).
  let at = hops.length - 1;
  while (at > 0 && hops[at] !== '' && isTrusted(rule, hops[at]!)) at--;
  if (hops[at] === '') at++;
  if (at >= hops.length) return undefined;
  return { ip: hops[at]!, chain: hops.slice(at).join(', ') };
}

/** The values of header `lower` among header lines (name, value, ...), joined with `, `; undefined: none. */
function headerValues(raw: readonly string[], lower: string): string | undefined {
  let out: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === lower.length && name.toLowerCase() === lower)
      out = out === undefined ? raw[i + 1]! : `${out}, ${raw[i + 1]!}`;
  }
  return out;
}

/**
 * Puts the real client into `request.client` by the listener's rule (once, at the request's start). A peer
 * outside the trusted CIDRs, or one whose headers name no address, stays the client, and the forwarding headers
 * then carry only its address: an untrusted client's x-forwarded-for is not passed on either.
 */
export function applyClientIpRule(rule: ClientIpRule, request: ClientRequest): void {
  const peer = request.client;
  let found: FoundClient | undefined;
  if (isTrusted(rule, peer.peerIp)) {
    const raw = request.rawHeaders;
    found =
      rule.header === undefined
        ? reportedClient(rule, headerValues(raw, 'x-forwarded-for'), undefined)
        : reportedClient(rule, undefined, headerValues(raw, rule.header)?.split(',')[0]);
  }
  const ip = found?.ip ?? peer.peerIp;
  const facts: ClientFacts = {
    ...peer,
    address: found === undefined ? peer.address : ip,
    ip,
    origin: originOf(ip),
    lines: undefined,
    trustedChain: found?.chain ?? '',
  };
  request.client = facts;
}

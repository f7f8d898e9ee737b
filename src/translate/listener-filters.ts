// A listener's pre-routing request filters (Gateway API v1.7 experimental `filters.requests`, GEP-5224) as the
// fleet config carries them, with the listener conditions the GEP names when they cannot be honoured. The CRD's
// CEL rules are checked here too, so standalone files and `portico translate` refuse what the API server would.

import type { Listener, ListenerFilter } from '../api/gateway.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import type { ListenerRequestFilter } from '../ir/fleet-config.js';
import { serviceOf } from './backends.js';
import type { Verdict } from './conditions.js';
import type { SnapshotLookup } from './lookup.js';
import { externalAuthorization } from './route-rules.js';

/** What a listener's filters come to: the filters to run, or the condition that keeps the listener out. */
export interface ListenerFilterVerdict {
  filters?: ListenerRequestFilter[];
  accepted?: Verdict;
  resolvedRefs?: Verdict;
}

/** The object declaring the listener (its namespace resolves references; cross-namespace needs a grant from it). */
export interface FilterOwner {
  kind: 'Gateway' | 'ListenerSet';
  namespace: string;
}

function refused(reason: string, message: string): Verdict {
  return { ok: false, reason, message };
}

/** The union's CEL rules: the field named by `type` is set, the other is not. */
function shapeProblem(f: ListenerFilter, at: string): string | undefined {
  if (f.type === 'ExternalAuth' && f.externalAuth === undefined)
    return `${at}.externalAuth: required for type ExternalAuth`;
  if (f.type !== 'ExternalAuth' && f.externalAuth !== undefined)
    return `${at}.externalAuth: only for type ExternalAuth`;
  if (f.type === 'ExtensionRef' && f.extensionRef === undefined)
    return `${at}.extensionRef: required for type ExtensionRef`;
  if (f.type !== 'ExtensionRef' && f.extensionRef !== undefined)
    return `${at}.extensionRef: only for type ExtensionRef`;
  return undefined;
}

/**
 * The listener's `filters.requests` in list order (the proxy runs them so, before route matching). Any filter it
 * cannot run keeps the whole listener out (GEP-5224: never a filter silently skipped): ExtensionRef, which names
 * no kind Portico implements, gives Accepted=False UnsupportedValue; an authorization Service that is missing or
 * not granted gives ResolvedRefs=False.
 */
export function listenerRequestFilters(
  l: Listener,
  owner: FilterOwner,
  lookup: SnapshotLookup,
): ListenerFilterVerdict {
  if (l.filters === undefined) return {};
  if (l.protocol !== 'HTTP' && l.protocol !== 'HTTPS')
    return {
      accepted: refused('InvalidListenerFilter', 'filters: only on a listener of protocol HTTP or HTTPS'),
    };
  const filters: ListenerRequestFilter[] = [];
  let resolvedRefs: Verdict | undefined;
  for (const [i, f] of (l.filters.requests ?? []).entries()) {
    const at = `filters.requests[${i}]`;
    const shape = shapeProblem(f, at);
    if (shape !== undefined) return { accepted: refused('InvalidListenerFilter', shape) };
    if (f.externalAuth === undefined) {
      const ref = f.extensionRef!;
      const kind = `${ref.group === '' ? 'core' : ref.group}/${ref.kind}`;
      return {
        accepted: refused('UnsupportedValue', `${at}: ExtensionRef to ${kind} ${ref.name} is not supported`),
      };
    }
    // The proxy runs listener filters before reading any body: a filter that wants one cannot be honoured.
    if ((f.externalAuth.forwardBody?.maxSize ?? 0) > 0)
      return {
        accepted: refused(
          'UnsupportedValue',
          `${at}.externalAuth.forwardBody: not supported on a listener filter`,
        ),
      };
    const problems: string[] = [];
    const auth = externalAuthorization(f.externalAuth, `${at}.externalAuth`, owner.namespace, problems);
    if (problems.length > 0) return { accepted: refused('InvalidListenerFilter', problems.join('; ')) };
    const from = { group: GATEWAY_API_GROUP, kind: owner.kind, namespace: owner.namespace };
    const found = serviceOf(f.externalAuth.backendRef, from, lookup);
    if ('reason' in found) {
      const reason = found.reason === 'RefNotPermitted' ? 'RefNotPermitted' : 'InvalidListenerFilterRef';
      const message = `${at}.externalAuth.backendRef: ${found.message}`;
      // The listener still serves (ResolvedRefs alone does not stop it): the filter refuses every request.
      filters.push({ type: 'ExternalAuth', auth, refused: message });
      resolvedRefs ??= refused(reason, message);
    } else filters.push({ type: 'ExternalAuth', auth });
  }
  const out: ListenerFilterVerdict = filters.length === 0 ? {} : { filters };
  if (resolvedRefs !== undefined) out.resolvedRefs = resolvedRefs;
  return out;
}

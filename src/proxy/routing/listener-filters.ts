// A Gateway listener's pre-routing filters (`filters.requests`, GEP-5224): run in order on every request of the
// listener before any route is matched, the first refusal answering. What an authorization service adds to the
// request is put on it, so that route matching (run once, after the last filter) and the backend see it; Host and
// :authority are never changed (the listener was chosen by them, and is not chosen again).
import type { HeaderModifier } from '../../ir/fleet-config.js';
import { type AccessVerdict, checkAccess } from '../access/pipeline.js';
import { type AccessRequest, accessRequest } from '../access/request-view.js';
import type { AuthorizationReach } from '../access/step.js';
import { ClientRequest } from '../exchange.js';
import { normalizePath } from './path-normalization.js';
import { hostWithoutPort, lookupHost } from './route-table.js';
import type { Snapshot } from './snapshot.js';

/** Header names a filter may never change: the listener was chosen by them. */
const FIXED = new Set(['host', ':authority']);

/** The request with the filters' header changes (set, append, remove), Host and :authority as they came. */
export function filteredRequest(req: ClientRequest, edits: HeaderModifier): ClientRequest {
  const set = edits.set.filter((h) => !FIXED.has(h.name.toLowerCase()));
  const remove = new Set(
    [...edits.remove, ...set.map((h) => h.name)].map((n) => n.toLowerCase()).filter((n) => !FIXED.has(n)),
  );
  const lines: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (!remove.has(raw[i]!.toLowerCase())) lines.push(raw[i]!, raw[i + 1]!);
  }
  for (const h of set) lines.push(h.name, h.value);
  for (const h of edits.add) if (!FIXED.has(h.name.toLowerCase())) lines.push(h.name, h.value);
  const out = new ClientRequest(
    req.method,
    req.url,
    lines,
    req.client,
    req.body,
    req.chunked,
    req.contentLength,
  );
  out.upstreamShare = req.upstreamShare;
  out.claims = req.claims;
  return out;
}

/** How a request's filters are run: the snapshot it resolves with, and what to do after. */
export interface ListenerFilterRun {
  snapshot: Snapshot | undefined;
  listenerName: string;
  https: boolean;
  reach: (snapshot: Snapshot) => AuthorizationReach;
  count: (policy: string, rule: string, outcome: 'allowed' | 'denied') => void;
  /** The request route matching sees (the same object when no filter changed it). */
  next: (req: ClientRequest) => void;
  refuse: (refusal: AccessVerdict & { allow: false }) => void;
}

/** Runs the filters of the request's VirtualHost; none: `next` now, with the request as it came. */
export function runListenerFilters(req: ClientRequest, run: ListenerFilterRun): void {
  const { snapshot } = run;
  const routes = snapshot?.listeners.get(run.listenerName);
  const filters = routes && lookupHost(routes.hosts, hostWithoutPort(req.host))?.requestFilters;
  if (snapshot === undefined || filters === undefined) {
    run.next(req);
    return;
  }
  const reach = run.reach(snapshot);
  // One at a time: each filter sees the request as the ones before it left it (the GEP's strict order).
  const from = (i: number, current: ClientRequest): void => {
    if (i === filters.length) {
      run.next(current);
      return;
    }
    checkAccess(
      [filters[i]!],
      filterView(current, run.https),
      run.count,
      (settled) => {
        if (!settled.allow) run.refuse(settled.refusal);
        else
          from(i + 1, settled.upstream === undefined ? current : filteredRequest(current, settled.upstream));
      },
      reach,
    );
  };
  from(0, req);
}

/** The request as an access step reads it (path normalised as route matching will). */
function filterView(req: ClientRequest, https: boolean): AccessRequest {
  const q = req.url.indexOf('?');
  const rawPath = q < 0 ? req.url : req.url.slice(0, q);
  const path = (rawPath.charCodeAt(0) === 47 ? normalizePath(rawPath) : undefined) ?? rawPath;
  return accessRequest(req, path, q < 0 ? '' : req.url.slice(q), https);
}

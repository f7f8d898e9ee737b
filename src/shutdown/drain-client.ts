// Asks a proxy's admin API to drain and waits until it reports done: the preStop hook of both containers.
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_MUTATION_HEADER } from '../platform/admin-request-guard.js';

export interface DrainResult {
  /**
   * `drained`: the proxy finished; `unreachable`: no proxy answered (nothing to drain); `refused`: the
   * admin API said no (see `error`); `timeout`.
   */
  outcome: 'drained' | 'unreachable' | 'refused' | 'timeout';
  inFlight: number;
  error?: string;
}

interface Stats {
  inFlight: number;
  drained: boolean;
}

async function stats(base: string): Promise<Stats | undefined> {
  try {
    const res = await fetch(`${base}/stats`, { signal: AbortSignal.timeout(2000) });
    return (await res.json()) as Stats;
  } catch {
    return undefined;
  }
}

export async function drainProxy(proxyAdmin: string, timeoutMs: number, pollMs = 200): Promise<DrainResult> {
  const base = `http://${proxyAdmin}`;
  const deadline = Date.now() + timeoutMs;
  try {
    const res = await fetch(`${base}/drain`, {
      method: 'POST',
      headers: { [ADMIN_MUTATION_HEADER]: 'true' },
      signal: AbortSignal.timeout(2000),
    });
    const body = await res.text();
    if (res.status !== 202)
      return { outcome: 'refused', inFlight: 0, error: `HTTP ${res.status}: ${body.trim()}` };
  } catch {
    return { outcome: 'unreachable', inFlight: 0 };
  }
  let last: Stats = { inFlight: 0, drained: false };
  while (Date.now() < deadline) {
    const current = await stats(base);
    // The proxy went away mid-drain: it finished (or died); either way nothing is left to wait for.
    if (current === undefined) return { outcome: 'drained', inFlight: 0 };
    last = current;
    if (current.drained) return { outcome: 'drained', inFlight: current.inFlight };
    await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())));
  }
  return { outcome: 'timeout', inFlight: last.inFlight };
}

// Sends a running proxy new settings through its admin API (PUT /settings), as the proxy's guard requires: the
// Host naming the admin address, the mutation header, no Origin. A new worker starts and takes the config
// before the proxy answers, so the deadline is generous.
import { type ProxySettings, parseProxySettings } from '../../ir/proxy-settings.js';
import { ADMIN_MUTATION_HEADER } from '../../platform/admin-request-guard.js';
import { formatHostPort } from '../../platform/host-port.js';
import { requestOnce } from './request-once.js';

const SETTINGS_REQUEST_TIMEOUT_MS = 30_000;

/** Undefined once the proxy applied `settings`, else why not (its refusal, or what kept it from answering). */
export async function putProxySettings(
  admin: { host: string; port: number },
  settings: ProxySettings,
): Promise<string | undefined> {
  const body = JSON.stringify(settings);
  const answer = await requestOnce({
    ...admin,
    method: 'PUT',
    path: '/settings',
    headers: {
      [ADMIN_MUTATION_HEADER]: 'true',
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    },
    body,
    timeoutMs: SETTINGS_REQUEST_TIMEOUT_MS,
    bodyCap: 1000,
  });
  if (typeof answer === 'string') return answer;
  return answer.status === 200
    ? undefined
    : refusal(`${formatHostPort(admin)}/settings`, answer.status, answer.text);
}

/**
 * The settings the proxy took last through its admin API (GET /settings), or undefined when it took none since
 * it started, or did not answer with them (a probe failing says so on its own).
 */
export async function takenSettings(
  admin: { host: string; port: number },
  timeoutMs: number,
): Promise<ProxySettings | undefined> {
  const answer = await requestOnce({ ...admin, path: '/settings', timeoutMs, bodyCap: 64 * 1024 });
  if (typeof answer === 'string' || answer.status !== 200) return undefined;
  try {
    const value: unknown = JSON.parse(answer.text);
    return value === null ? undefined : parseProxySettings(value);
  } catch {
    // Not settings the proxy could have taken: nothing to compare.
    return undefined;
  }
}

function refusal(where: string, status: number | undefined, text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === 'string') return `${where}: HTTP ${status}: ${parsed.error}`;
  } catch {
    // Not the proxy's JSON (another program on that port): its status says enough.
  }
  return `${where}: HTTP ${status}`;
}

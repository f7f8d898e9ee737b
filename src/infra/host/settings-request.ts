// Sends a running proxy new settings through its admin API (PUT /settings), as the proxy's guard requires: the
// Host naming the admin address, the mutation header, no Origin. A new worker starts and takes the config
// before the proxy answers, so the deadline is generous.
import { request } from 'node:http';
import type { ProxySettings } from '../../ir/proxy-settings.js';
import { ADMIN_MUTATION_HEADER } from '../../platform/admin-request-guard.js';
import { formatHostPort } from '../../platform/host-port.js';

export const SETTINGS_REQUEST_TIMEOUT_MS = 30_000;

/** Undefined once the proxy applied `settings`, else why not (its refusal, or what kept it from answering). */
export function putProxySettings(
  admin: { host: string; port: number },
  settings: ProxySettings,
  timeoutMs = SETTINGS_REQUEST_TIMEOUT_MS,
): Promise<string | undefined> {
  const where = `${formatHostPort(admin)}/settings`;
  const body = JSON.stringify(settings);
  return new Promise((resolve) => {
    const req = request(
      {
        host: admin.host,
        port: admin.port,
        method: 'PUT',
        path: '/settings',
        agent: false,
        headers: {
          host: formatHostPort(admin),
          [ADMIN_MUTATION_HEADER]: 'true',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < 1000) text += chunk;
        });
        res.on('end', () =>
          resolve(res.statusCode === 200 ? undefined : refusal(where, res.statusCode, text)),
        );
        res.on('error', (error) => resolve(`${where}: ${error.message}`));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (error) => resolve(`${where}: ${error.message}`));
    req.end(body);
  });
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

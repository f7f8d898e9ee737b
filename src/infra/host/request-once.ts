// One HTTP request to a supervised proxy's loopback port, on a fresh connection (no agent), with a deadline:
// what the liveness probe and the settings update both send. The answer's body is read up to a cap.
import { type OutgoingHttpHeaders, request } from 'node:http';
import { formatHostPort } from '../../platform/host-port.js';

export interface OneRequest {
  host: string;
  port: number;
  path: string;
  method?: string;
  headers?: OutgoingHttpHeaders;
  body?: string;
  timeoutMs: number;
  /** Characters of the answer's body kept; the rest is read and dropped. */
  bodyCap: number;
}

/** The answer's status and (capped) body, or why none came, starting with `host:port/path`. */
export function requestOnce(r: OneRequest): Promise<{ status: number | undefined; text: string } | string> {
  const where = `${formatHostPort(r)}${r.path}`;
  return new Promise((resolve) => {
    const req = request(
      {
        host: r.host,
        port: r.port,
        method: r.method ?? 'GET',
        path: r.path,
        agent: false,
        headers: { host: formatHostPort(r), ...r.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < r.bodyCap) text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode, text }));
        res.on('error', (error) => resolve(`${where}: ${error.message}`));
      },
    );
    req.setTimeout(r.timeoutMs, () => req.destroy(new Error(`no answer within ${r.timeoutMs} ms`)));
    req.on('error', (error) => resolve(`${where}: ${error.message}`));
    req.end(r.body);
  });
}

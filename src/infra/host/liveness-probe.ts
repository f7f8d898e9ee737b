// One HTTP liveness probe, as a kubelet does it: a fresh connection, a deadline, 200 means live. A hung process
// (stopped, or an event loop that never turns) still has its sockets accepted by the kernel, so only an answer
// counts, never a connect.
import { request } from 'node:http';
import { formatHostPort } from '../../platform/host-port.js';

export interface ProbeTarget {
  host: string;
  port: number;
  path: string;
}

/** Undefined when the target answered 200 in time, else why not. */
export function probeLiveness(target: ProbeTarget, timeoutMs: number): Promise<string | undefined> {
  const where = `${formatHostPort(target)}${target.path}`;
  return new Promise((resolve) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        path: target.path,
        agent: false,
        headers: { host: formatHostPort(target) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (body.length < 200) body += chunk;
        });
        res.on('end', () =>
          resolve(res.statusCode === 200 ? undefined : `${where}: HTTP ${res.statusCode}: ${body.trim()}`),
        );
        res.on('error', (error) => resolve(`${where}: ${error.message}`));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (error) => resolve(`${where}: ${error.message}`));
    req.end();
  });
}

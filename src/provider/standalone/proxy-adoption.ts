// Which recorded proxies a starting controller takes over: those still running as the very process that was
// recorded (pid, start time and command line; where /proc is missing, the proxy's admin API must answer with
// that pid on the recorded address). Anything else is a stale record.
import { request } from 'node:http';
import { matchesProcess } from '../../infra/host/process-identity.js';
import { type ProxyRecord, readProxyRecords, removeProxyRecord } from '../../infra/host/proxy-records.js';
import { PORTS } from '../../ir/well-known.js';
import type { Logger } from '../../platform/log-line.js';

/** Undefined when the record's process is the proxy it names, else why it is not. */
export async function whyNotAdoptable(record: ProxyRecord): Promise<string | undefined> {
  const match = matchesProcess(record);
  if (match === 'yes') return undefined;
  if (match === 'no') return 'no longer running (or its pid now belongs to another process)';
  const pid = await adminPid(record.address);
  return pid === record.pid
    ? undefined
    : `its admin API on ${record.address} does not answer as pid ${record.pid}`;
}

function adminPid(address: string): Promise<number | undefined> {
  const port = PORTS.proxyAdmin;
  return new Promise((resolve) => {
    const req = request(
      { host: address, port, path: '/stats', agent: false, headers: { host: `${address}:${port}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => {
          try {
            const pid = (JSON.parse(body) as { pid?: unknown }).pid;
            resolve(typeof pid === 'number' ? pid : undefined);
          } catch {
            resolve(undefined);
          }
        });
      },
    );
    req.setTimeout(2000, () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** The records in `recordsDir` a starting controller adopts; stale ones are removed, each with a line why. */
export async function adoptableProxies(recordsDir: string, log: Logger): Promise<ProxyRecord[]> {
  const adoptable: ProxyRecord[] = [];
  for (const record of readProxyRecords(recordsDir, (file, why) => log.warn(`ignoring ${file}: ${why}`))) {
    const why = await whyNotAdoptable(record);
    if (why === undefined) adoptable.push(record);
    else {
      removeProxyRecord(recordsDir, record.fleet);
      log.warn(`proxy ${record.fleet} (pid ${record.pid}) of an earlier run is ${why}; a new one will start`);
    }
  }
  return adoptable;
}

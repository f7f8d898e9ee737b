// An OTLP/HTTP (JSON) traces receiver inside the cluster, for proxies to export to (pods cannot reach the host):
// a pod running the Portico image's Node with a dozen lines of script that keep every span and hand them back on
// GET /spans to the test, which reaches pod addresses from the host.
import type { Cluster } from '../../cluster/harness.js';
import { asList, call, eventually } from '../../cluster/kube-api.js';
import { httpRequest } from '../../support/http.js';
import type { OtlpSpan } from '../../support/otlp-collector.js';
import { podService } from './traffic.js';

export const OTLP_PORT = 4318;

const RECEIVER = `
const spans = [];
require('node:http').createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') {
      try {
        for (const rs of JSON.parse(body).resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      } catch { res.writeHead(400).end(); return; }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    } else if (req.method === 'GET' && req.url === '/spans') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(spans));
    } else res.writeHead(404).end();
  });
}).listen(${OTLP_PORT});
`;

/** A Deployment and Service `name` in `ns` receiving OTLP/HTTP on 4318; returns the traces URL proxies use. */
export async function otlpReceiver(cluster: Cluster, ns: string, name: string): Promise<string> {
  const container = { name: 'receiver', command: ['node', '-e', RECEIVER] };
  await podService(cluster, ns, name, container, { name: 'otlp', container: OTLP_PORT, service: OTLP_PORT });
  return `http://${name}.${ns}.svc.cluster.local:${OTLP_PORT}/v1/traces`;
}

/** Every span the receiver `name` in `ns` was sent so far (read from its ready pod's address). */
export async function receivedSpans(cluster: Cluster, ns: string, name: string): Promise<OtlpSpan[]> {
  const ip = await eventually(
    async () => {
      const r = await call(cluster, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${name}`);
      const ready = asList(r.body.items).find((p) =>
        asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return typeof ready?.status?.podIP === 'string' ? String(ready.status.podIP) : undefined;
    },
    `a ready ${ns}/${name} receiver`,
    60_000,
  );
  const reply = await httpRequest(OTLP_PORT, '/spans', { address: ip, host: ip, timeoutMs: 5000 });
  if (reply.status !== 200) throw new Error(`GET /spans: HTTP ${reply.status}`);
  return JSON.parse(reply.body) as OtlpSpan[];
}

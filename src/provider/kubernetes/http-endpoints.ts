// Plain HTTP endpoints of the controller: /healthz and /readyz (port 18001), /metrics (port 19001).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { parseHostPort } from '../../platform/host-port.js';

export interface Endpoint {
  address: string;
  close(): Promise<void>;
}

export async function serveHttp(
  address: string,
  source: string,
  /** Path → its reply; a route that must know who asks reads the request. */
  routes: Record<string, (req: IncomingMessage) => { status: number; body: string; type?: string }>,
): Promise<Endpoint> {
  const { host, port } = parseHostPort(address, source);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = routes[path];
    if (route === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-length': 0 }).end();
      return;
    }
    const reply = route(req);
    res.writeHead(reply.status, {
      'content-type': reply.type ?? 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(reply.body),
    });
    res.end(req.method === 'HEAD' ? undefined : reply.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address();
  const actualPort = typeof bound === 'object' && bound !== null ? bound.port : port;
  return {
    address: `${host.includes(':') ? `[${host}]` : host}:${actualPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

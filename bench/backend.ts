// The benchmark's upstream: the cheapest possible node:http answer, so the proxies are what is measured.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
  res.end('ok');
});
server.keepAliveTimeout = 120_000;
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  console.log(`backend listening on 127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => process.exit(0));

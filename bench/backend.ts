// The benchmark's upstream: the cheapest possible node:http answer, so the proxies are what is measured. Its
// status is 200, or the first argument (a backend that always fails, for the retry bench).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const status = Number(process.argv[2] ?? 200);
const server = createServer((_req, res) => {
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': '2' });
  res.end('ok');
});
server.keepAliveTimeout = 120_000;
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  console.log(`backend listening on 127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => process.exit(0));

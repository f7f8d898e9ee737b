// The floor for any proxy: a Node process that relays each connection's bytes to the backend and back,
// parsing nothing. What it adds is the cost of one more process hop on this machine, not of HTTP.

import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:net';

const backendPort = Number(process.argv[2]);
const server = createServer({ noDelay: true }, (client) => {
  const upstream = connect({ host: '127.0.0.1', port: backendPort, noDelay: true });
  client.pipe(upstream).pipe(client);
  const close = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
});
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  console.log(`relay listening on 127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => process.exit(0));

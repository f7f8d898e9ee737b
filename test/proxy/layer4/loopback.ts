// Loopback servers and readers the layer-4 relay tests share: servers closed after the file's tests, a port
// nothing listens on, a socket read to its end, and a digest to compare what arrived with what was sent.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { after } from 'node:test';

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

/** A server on 127.0.0.1 (half-open connections allowed); its port. */
export async function listen(onConnection: (socket: Socket) => void): Promise<number> {
  const server = createServer({ allowHalfOpen: true }, onConnection);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** A port that was listening and is no more: a connect to it is refused. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Reads `socket` to its end. */
export async function readAll(socket: Socket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await once(socket, 'end');
  return Buffer.concat(chunks);
}

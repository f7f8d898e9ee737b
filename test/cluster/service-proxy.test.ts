import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { resetOrDestroy } from './services/service-proxy.js';

let server: Server;
const accepted: Socket[] = [];
before(async () => {
  server = createServer((socket) => accepted.push(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function acceptedPair(): Promise<{ client: Socket; served: Socket }> {
  const before = accepted.length;
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no server address');
  const client = connect(address.port, '127.0.0.1');
  client.on('error', () => {});
  await once(client, 'connect');
  while (accepted.length === before) await new Promise((resolve) => setImmediate(resolve));
  return { client, served: accepted[accepted.length - 1]! };
}

/** Waits for the socket's 'close', failing on an 'error' instead (a failed reset reports one, then never closes). */
function closedWithoutError(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', () => resolve());
  });
}

test('a backend reset reaches a client whose write side is still open as a reset', async () => {
  const { client, served } = await acceptedPair();
  const closed = closedWithoutError(served);
  const clientError = once(client, 'error');
  resetOrDestroy(served);
  await closed;
  const [error] = (await clientError) as [NodeJS.ErrnoException];
  assert.equal(error.code, 'ECONNRESET');
  client.destroy();
});

test('a client whose shutdown is in flight is destroyed and closes, its handle not leaked', async () => {
  const { client, served } = await acceptedPair();
  served.end();
  // The shutdown request is issued on the next tick; reset it while libuv still has it pending.
  await new Promise((resolve) => process.nextTick(resolve));
  assert.equal(served.writableEnded, true);
  assert.equal(served.writableFinished, false);
  const closed = closedWithoutError(served);
  resetOrDestroy(served);
  await closed;
  assert.equal(served.destroyed, true);
  client.destroy();
});

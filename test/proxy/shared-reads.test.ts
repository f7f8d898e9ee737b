// Accepted sockets read into the shared buffer on the Nodes the proxy runs on (the suite runs this file on the
// machine's Node and the image's): if a Node stops offering it, this fails rather than the proxy silently
// falling back to 'data' events. Then a released socket reads as a stream again, in order, with backpressure.
import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { kept, readShared } from '../../src/proxy/downstream/shared-reads.js';

function accepted(server: Server): Promise<Socket> {
  return new Promise((resolve) => server.once('connection', resolve));
}

describe('shared reads', () => {
  let server: Server;
  let port: number;
  before(async () => {
    server = createServer({ allowHalfOpen: true });
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('reads an accepted socket into views of one buffer, then hands the bytes to its stream once released', async () => {
    const serverSide = accepted(server);
    const client = connect({ host: '127.0.0.1', port });
    const socket = await serverSide;
    const views: Buffer[] = [];
    const copies: string[] = [];
    const reads = readShared(socket, (bytes) => {
      views.push(bytes);
      copies.push(kept(bytes).toString());
    });
    assert.notEqual(reads, undefined, `this Node (${process.version}) does not offer shared reads`);
    client.write('first');
    await new Promise((r) => setTimeout(r, 50));
    client.write('second');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(copies, ['first', 'second']);
    // The views share one buffer: a later read overwrote the first's bytes, which is why kept() copies.
    assert.equal(views[0]!.buffer, views[1]!.buffer);
    assert.notEqual(kept(views[0]!).buffer, views[0]!.buffer);
    const own = Buffer.from('own');
    assert.equal(kept(own), own);

    reads!.release();
    const streamed: string[] = [];
    socket.on('data', (chunk: Buffer) => streamed.push(chunk.toString()));
    const ended = new Promise((resolve) => socket.once('end', resolve));
    client.end('third, as a stream');
    await ended;
    assert.deepEqual(copies, ['first', 'second']);
    assert.equal(streamed.join(''), 'third, as a stream');
    socket.destroy();
  });

  it('a released socket that is paused stops reading, and resumes where it stopped', async () => {
    const serverSide = accepted(server);
    const client = connect({ host: '127.0.0.1', port });
    const socket = await serverSide;
    const reads = readShared(socket, () => assert.fail('released before any read'));
    assert.notEqual(reads, undefined);
    reads!.release();
    socket.pause();
    const payload = Buffer.alloc(4 * 1024 * 1024, 'x');
    client.end(payload);
    await new Promise((r) => setTimeout(r, 100));
    // Paused: what arrived waits (in the socket or its stream's buffer), nothing is lost.
    let received = 0;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    socket.resume();
    await new Promise((resolve) => socket.once('end', resolve));
    assert.equal(received, payload.length);
    socket.destroy();
  });
});

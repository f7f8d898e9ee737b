// The ClientHello reader against real ClientHellos (Node's TLS client, with and without SNI), every prefix of
// them, corrupted copies, and records that break the framing rules: it never throws, reads the name only from a
// well-formed hello, and refuses one larger than its limit before it is whole.
import assert from 'node:assert/strict';
import { type AddressInfo, createServer } from 'node:net';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { readClientHello } from '../../src/proxy/layer4/client-hello.js';

const LIMIT = 16 * 1024;

/** The first bytes Node's TLS client sends, captured by a plain TCP server. */
async function capturedHello(servername: string | undefined): Promise<Buffer> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const got = new Promise<Buffer>((resolve) => {
    server.once('connection', (socket) => {
      let data = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        data = Buffer.concat([data, chunk]);
        if (readClientHello(data, LIMIT).state !== 'incomplete') {
          socket.destroy();
          resolve(data);
        }
      });
    });
  });
  const client = connect({
    host: '127.0.0.1',
    port,
    rejectUnauthorized: false,
    ...(servername === undefined ? {} : { servername }),
  });
  client.on('error', () => {});
  const hello = await got;
  client.destroy();
  server.close();
  return hello;
}

test('a real ClientHello gives its server name, lower case', async () => {
  const hello = await capturedHello('Abc.Example.com');
  assert.deepEqual(readClientHello(hello, LIMIT), { state: 'complete', serverName: 'abc.example.com' });
});

test('a ClientHello without SNI is complete with no server name', async () => {
  const hello = await capturedHello(undefined);
  assert.deepEqual(readClientHello(hello, LIMIT), { state: 'complete', serverName: undefined });
});

test('every prefix of a ClientHello is incomplete, never an error', async () => {
  const hello = await capturedHello('abc.example.com');
  for (let n = 0; n < hello.length; n++)
    assert.equal(readClientHello(hello.subarray(0, n), LIMIT).state, 'incomplete', `prefix ${n}`);
});

test('a ClientHello split over two records reads as one', async () => {
  const hello = await capturedHello('split.example.com');
  const body = hello.subarray(5);
  const half = Math.floor(body.length / 2);
  const record = (part: Buffer) =>
    Buffer.concat([Buffer.from([22, 3, 1, part.length >> 8, part.length & 255]), part]);
  const split = Buffer.concat([record(body.subarray(0, half)), record(body.subarray(half))]);
  assert.deepEqual(readClientHello(split, LIMIT), { state: 'complete', serverName: 'split.example.com' });
});

test('corrupted ClientHellos never throw and never give a name that is not a DNS name', async () => {
  const hello = await capturedHello('abc.example.com');
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed;
  };
  for (let i = 0; i < 5000; i++) {
    const copy = Buffer.from(hello);
    const flips = 1 + (random() % 4);
    for (let f = 0; f < flips; f++) copy[random() % copy.length] = random() % 256;
    const cut = copy.subarray(0, random() % (copy.length + 1));
    const read = readClientHello(cut, LIMIT);
    if (read.state === 'complete' && read.serverName !== undefined)
      assert.match(read.serverName, /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/);
  }
});

test('framing the RFCs forbid is refused', async () => {
  const hello = await capturedHello('abc.example.com');
  const cases: [string, Buffer][] = [
    ['an HTTP request', Buffer.from('GET / HTTP/1.1\r\n\r\n')],
    ['an application data record', Buffer.concat([Buffer.from([23]), hello.subarray(1)])],
    ['an empty record', Buffer.from([22, 3, 1, 0, 0])],
    ['a record over 2^14 bytes', Buffer.from([22, 3, 1, 0x40, 0x01])],
    ['a record version not 3.x', Buffer.concat([Buffer.from([22, 2, 0]), hello.subarray(3)])],
    ['a ServerHello', Buffer.concat([hello.subarray(0, 5), Buffer.from([2]), hello.subarray(6)])],
  ];
  for (const [what, bytes] of cases) assert.equal(readClientHello(bytes, LIMIT).state, 'invalid', what);
});

test('a ClientHello larger than the limit is refused before it is whole', async () => {
  const hello = await capturedHello('abc.example.com');
  assert.equal(readClientHello(hello.subarray(0, 9), 64).state, 'invalid');
});

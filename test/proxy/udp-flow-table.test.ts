// The UDP flow table on its own: the idle sweep ends exactly the flows idle for the timeout (their sockets
// closed, each reported once), and ending every flow leaves none.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { test } from 'node:test';
import { type Flow, FlowTable } from '../../src/proxy/layer4/udp-flows.js';

function flow(lastSeen: number): Flow {
  return {
    upstream: createSocket('udp4'),
    address: '127.0.0.1',
    port: 9,
    lastSeen,
    startMs: 0,
    started: lastSeen,
    bytesReceived: 0,
    bytesSent: 0,
    routeName: 'r',
  };
}

test('the sweep ends the flows idle for the timeout and keeps the others', async () => {
  const ended: string[] = [];
  const table = new FlowTable(10, 1000, (client) => ended.push(client));
  const idle = flow(0);
  const fresh = flow(500);
  table.flows.set('a|1', idle);
  table.flows.set('b|2', fresh);
  const closed = once(idle.upstream, 'close');
  assert.equal(table.sweep(1000), 1);
  await closed;
  assert.deepEqual(ended, ['a|1']);
  assert.deepEqual([...table.flows.keys()], ['b|2']);
  // Ending a flow that already ended reports nothing more.
  table.end('a|1');
  assert.deepEqual(ended, ['a|1']);
  table.endAll();
  assert.equal(table.flows.size, 0);
  assert.deepEqual(ended, ['a|1', 'b|2']);
});

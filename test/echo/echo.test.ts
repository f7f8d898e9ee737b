import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseDelay } from '../../src/echo/server.js';
import { type Child, startPortico, waitForOutput } from '../support/child.js';
import { type EchoBody, freePort, httpRequest } from '../support/http.js';

describe('portico echo', () => {
  let child: Child;
  let port: number;

  before(async () => {
    child = startPortico(['echo', '--port', '0', '--host', '127.0.0.1'], {
      NAMESPACE: 'ns1',
      INGRESS_NAME: 'gw1',
      SERVICE_NAME: 'svc1',
      POD_NAME: 'pod1',
    });
    port = Number((await waitForOutput(child, /listening on 127\.0\.0\.1:(\d+)/))[1]);
  });
  after(async () => {
    child.process.kill('SIGTERM');
    assert.equal(await child.exited, 0);
  });

  it('replies with the request and its identity as JSON', async () => {
    const reply = await httpRequest(port, '/a/b?x=1&y=2', {
      host: 'echo.test',
      method: 'POST',
      headers: { 'x-multi': 'one' },
      body: 'ignored',
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'application/json');
    const body = JSON.parse(reply.body) as EchoBody;
    assert.equal(body.path, '/a/b?x=1&y=2');
    assert.equal(body.host, 'echo.test');
    assert.equal(body.method, 'POST');
    assert.equal(body.proto, 'HTTP/1.1');
    assert.deepEqual(body.headers['X-Multi'], ['one']);
    assert.deepEqual([body.namespace, body.ingress, body.service, body.pod], ['ns1', 'gw1', 'svc1', 'pod1']);
  });

  it('replies with the status of /status/NNN', async () => {
    assert.equal((await httpRequest(port, '/status/418')).status, 418);
    assert.equal((await httpRequest(port, '/status/204')).status, 204);
  });

  it('sets response headers from X-Echo-Set-Header', async () => {
    const reply = await httpRequest(port, '/', {
      headers: { 'x-echo-set-header': 'X-One:1, X-Two: two words' },
    });
    assert.equal(reply.headers['x-one'], '1');
    assert.equal(reply.headers['x-two'], 'two words');
  });

  it('waits for ?delay= before replying', async () => {
    assert.equal((await httpRequest(port, '/?delay=20ms')).status, 200);
    assert.equal(parseDelay('1s'), 1000);
    assert.equal(parseDelay('250ms'), 250);
    assert.equal(parseDelay('1.5'), 1500);
    assert.equal(parseDelay('soon'), 0);
  });

  it('honours HTTP_PORT', async () => {
    const wanted = await freePort();
    const other = startPortico(['echo', '--host', '127.0.0.1'], { HTTP_PORT: String(wanted) });
    await waitForOutput(other, new RegExp(`listening on 127\\.0\\.0\\.1:${wanted}`));
    assert.equal((await httpRequest(wanted, '/')).status, 200);
    other.process.kill('SIGTERM');
    assert.equal(await other.exited, 0);
  });
});

// External authorization over HTTP: what is sent to the service and copied back (unit), and a real
// authorization server answering allow, deny, redirect, a hang and a refusal to connect.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { ExternalAuthorization } from '../../../src/ir/external-auth.js';
import {
  authorizationPath,
  authorizationRequestLines,
  copiedResponseHeaders,
  ExternalHttpAuthorizer,
} from '../../../src/proxy/access/external-http.js';
import type { AccessRequest } from '../../../src/proxy/access/request-view.js';
import { closeServer, freePort, listen } from '../../support/http.js';

function config(extra: Partial<ExternalAuthorization> = {}): ExternalAuthorization {
  return {
    protocol: 'HTTP',
    cluster: 'default/auth:80',
    allowedRequestHeaders: [],
    pathPrefix: '',
    allowedResponseHeaders: [],
    forwardBodyMaxBytes: 0,
    timeoutMs: 2_000,
    failOpen: false,
    ...extra,
  };
}

function request(extra: Partial<AccessRequest> = {}): AccessRequest {
  return {
    method: 'GET',
    target: '/app/page?x=1',
    headerLines: ['Host', 'app.example', 'Authorization', 'Bearer t', 'X-User-Hint', 'h', 'Cookie', 'c=1'],
    host: 'app.example',
    clientAddress: '10.1.2.3',
    tls: true,
    path: '/',
    search: '',
    header: () => undefined,
    serverName: 'app.example',
    body: undefined,
    ...extra,
  };
}

describe('forward-auth request and answer (unit)', () => {
  it('adds the prefix to the client path once', () => {
    assert.equal(authorizationPath('', '/a?b'), '/a?b');
    assert.equal(authorizationPath('/auth', '/a?b'), '/auth/a?b');
    assert.equal(authorizationPath('/auth/', '/a'), '/auth/a');
  });

  it('sends host, authorization and the allowed headers only, with forward-auth lines', () => {
    const lines = authorizationRequestLines(config({ allowedRequestHeaders: ['cookie'] }), request(), 0);
    const names = lines.filter((_, i) => i % 2 === 0);
    assert.deepEqual(names, [
      'host',
      'authorization',
      'cookie',
      'x-forwarded-method',
      'x-forwarded-proto',
      'x-forwarded-uri',
      'x-forwarded-for',
      'x-forwarded-host',
      'content-length',
    ]);
    assert.ok(!names.includes('x-user-hint'));
  });

  it('copies the allowed answer headers, or all but framing when none are named', () => {
    const answer = [
      'X-Auth-User',
      'alice',
      'Content-Length',
      '0',
      'Connection',
      'keep-alive',
      'Host',
      'evil',
    ];
    assert.deepEqual(copiedResponseHeaders([], answer), [['x-auth-user', 'alice']]);
    assert.deepEqual(copiedResponseHeaders(['x-other'], answer), []);
  });
});

describe('forward-auth against a real authorization server', () => {
  let server: Server;
  let port: number;
  const seen: IncomingMessage[] = [];
  const bodies: string[] = [];

  before(async () => {
    server = createServer((req, res) => {
      seen.push(req);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks).toString());
        const path = req.url ?? '';
        if (path.startsWith('/hang')) return;
        if (req.headers.authorization === 'Bearer good') {
          res.writeHead(200, { 'x-auth-user': 'alice', 'x-auth-role': 'admin' });
          res.end('ignored');
        } else if (path.includes('login')) {
          res.writeHead(302, { location: 'https://login.example/?rd=x' });
          res.end();
        } else {
          res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' });
          res.end('no entry');
        }
      });
    });
    port = await listen(server);
  });
  after(async () => {
    server.closeAllConnections();
    await closeServer(server);
  });

  const endpoint = (): { address: string; port: number } => ({ address: '127.0.0.1', port });

  it('lets a request pass with the answer headers copied for the upstream', async () => {
    const authorizer = new ExternalHttpAuthorizer();
    const authorizerConfig = config({ pathPrefix: '/verify', allowedResponseHeaders: ['x-auth-user'] });
    const decision = await authorizer.check(
      authorizerConfig,
      request({ headerLines: ['Host', 'app.example', 'Authorization', 'Bearer good'] }),
      endpoint(),
    );
    authorizer.close();
    assert.equal(decision.allowed, true);
    assert.deepEqual(decision.allowed && decision.upstream.set, [['x-auth-user', 'alice']]);
    const last = seen.at(-1)!;
    assert.equal(last.url, '/verify/app/page?x=1');
    assert.equal(last.headers['x-forwarded-uri'], '/app/page?x=1');
    assert.equal(last.headers['x-forwarded-for'], '10.1.2.3');
    assert.equal(last.headers['content-length'], '0');
  });

  it('returns a denial to the client as the service sent it', async () => {
    const authorizer = new ExternalHttpAuthorizer();
    const authorizerConfig = config();
    const decision = await authorizer.check(authorizerConfig, request(), endpoint());
    authorizer.close();
    assert.equal(decision.allowed, false);
    if (decision.allowed) return;
    assert.equal(decision.status, 401);
    assert.equal(decision.reason, 'denied');
    assert.equal(decision.body.toString(), 'no entry');
    assert.ok(decision.lines.includes('www-authenticate'));
    assert.ok(!decision.lines.includes('content-length'));
  });

  it('passes a redirect to a login page on', async () => {
    const authorizer = new ExternalHttpAuthorizer();
    const authorizerConfig = config();
    const decision = await authorizer.check(
      authorizerConfig,
      request({ target: '/login-please' }),
      endpoint(),
    );
    authorizer.close();
    assert.equal(decision.allowed === false && decision.status, 302);
  });

  it('forwards the body up to its bound, and refuses a larger one with 413', async () => {
    const authorizer = new ExternalHttpAuthorizer();
    const authorizerConfig = config({ forwardBodyMaxBytes: 8 });
    const small = await authorizer.check(
      authorizerConfig,
      request({ method: 'POST', body: Buffer.from('abc') }),
      endpoint(),
    );
    assert.equal(small.allowed, false);
    assert.equal(bodies.at(-1), 'abc');
    assert.equal(seen.at(-1)!.headers['content-length'], '3');
    const large = await authorizer.check(
      authorizerConfig,
      request({ method: 'POST', body: Buffer.alloc(9) }),
      endpoint(),
    );
    authorizer.close();
    assert.equal(large.allowed === false && large.status, 413);
  });

  it('fails closed on a service that hangs, and open when configured so', async () => {
    const closed = new ExternalHttpAuthorizer();
    const closedConfig = config({ timeoutMs: 200 });
    const hung = await closed.check(closedConfig, request({ target: '/hang' }), endpoint());
    closed.close();
    assert.deepEqual(hung.allowed === false && [hung.status, hung.reason], [403, 'timeout']);
    const open = new ExternalHttpAuthorizer();
    const openConfig = config({ timeoutMs: 200, failOpen: true });
    const passed = await open.check(openConfig, request({ target: '/hang' }), endpoint());
    open.close();
    assert.equal(passed.allowed && passed.failedOpen, 'timeout');
  });

  it('fails closed when the service refuses connections', async () => {
    const authorizer = new ExternalHttpAuthorizer();
    const authorizerConfig = config();
    const decision = await authorizer.check(authorizerConfig, request(), {
      address: '127.0.0.1',
      port: await freePort(),
    });
    authorizer.close();
    assert.deepEqual(decision.allowed === false && [decision.status, decision.reason], [403, 'error']);
  });
});

// External authorization over gRPC (Envoy ext_authz v3): the CheckRequest sent and the decision a CheckResponse
// makes (unit), and a real grpc-js server implementing Authorization/Check, plus one that never answers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import type { ExternalAuthorization } from '../../../src/ir/external-auth.js';
import {
  type CheckRequest,
  type CheckResponse,
  checkDecision,
  checkMethod,
  checkRequest,
  ExternalGrpcAuthorizer,
} from '../../../src/proxy/access/external-grpc.js';
import type { AccessRequest } from '../../../src/proxy/access/request-view.js';
import { freePort } from '../../support/http.js';

function config(extra: Partial<ExternalAuthorization> = {}): ExternalAuthorization {
  return {
    protocol: 'GRPC',
    cluster: 'default/authz:9000',
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
    target: '/orders?id=7',
    headerLines: ['Host', 'shop.example', 'Authorization', 'Bearer good', 'X-Trace', 'a', 'X-Trace', 'b'],
    host: 'shop.example',
    clientAddress: '10.0.0.9',
    tls: false,
    path: '/',
    search: '',
    header: () => undefined,
    serverName: undefined,
    body: undefined,
    ...extra,
  };
}

const option = (key: string, value: string, append?: boolean) => ({
  header: { key, value },
  append: append === undefined ? null : { value: append },
  appendAction: 0,
});

describe('ext_authz messages (unit)', () => {
  it('sends the request attributes, all headers joined, and the pseudo-headers', () => {
    const sent = checkRequest(config(), request(), 1_700_000_000_123, 8080);
    const http = sent.attributes.request.http;
    assert.equal(http.path, '/orders?id=7');
    assert.equal(http.query, 'id=7');
    assert.equal(http.headers['x-trace'], 'a,b');
    assert.equal(http.headers[':authority'], 'shop.example');
    assert.equal(sent.attributes.source.address.socketAddress.address, '10.0.0.9');
    assert.deepEqual(sent.attributes.request.time, { seconds: 1_700_000_000, nanos: 123_000_000 });
  });

  it('sends only the allowed headers when a list is given', () => {
    const sent = checkRequest(config({ allowedRequestHeaders: ['authorization'] }), request(), 0, 0);
    assert.deepEqual(Object.keys(sent.attributes.request.http.headers).sort(), [
      ':authority',
      ':method',
      ':path',
      'authorization',
    ]);
  });

  it('makes OK edits, refusing to touch host and framing', () => {
    const decision = checkDecision({
      status: { code: 0, message: '' },
      okResponse: {
        headers: [option('x-user', 'alice'), option('x-group', 'ops', true), option('host', 'evil')],
        headersToRemove: ['authorization', 'content-length'],
        responseHeadersToAdd: [option('x-checked', 'yes')],
      },
    });
    assert.equal(decision.allowed, true);
    if (!decision.allowed) return;
    assert.deepEqual(decision.upstream, {
      set: [['x-user', 'alice']],
      append: [['x-group', 'ops']],
      remove: ['authorization'],
    });
    assert.deepEqual(decision.responseLines, ['x-checked', 'yes']);
  });

  it('answers a denial with its status, headers and body; 403 without one', () => {
    const decision = checkDecision({
      status: { code: status.PERMISSION_DENIED, message: 'no' },
      deniedResponse: {
        status: { code: 401 },
        headers: [option('www-authenticate', 'Bearer')],
        body: 'who?',
      },
    });
    assert.deepEqual(
      decision.allowed === false && [decision.status, decision.lines, decision.body.toString()],
      [401, ['www-authenticate', 'Bearer'], 'who?'],
    );
    const bare = checkDecision({ status: { code: status.UNAUTHENTICATED, message: '' } });
    assert.equal(bare.allowed === false && bare.status, 403);
  });
});

describe('ext_authz against a real grpc-js authorization server', () => {
  const server = new Server();
  let port = 0;
  const received: CheckRequest[] = [];

  before(async () => {
    const method = checkMethod();
    server.addService(
      { Check: method },
      {
        Check(call: ServerUnaryCall<CheckRequest, CheckResponse>, callback: sendUnaryData<CheckResponse>) {
          received.push(call.request);
          const http = call.request.attributes.request.http;
          if (http.path.startsWith('/hang')) return;
          if (http.headers.authorization === 'Bearer good') {
            callback(null, {
              status: { code: 0, message: '' },
              okResponse: {
                headers: [option('x-user', 'alice')],
                headersToRemove: ['authorization'],
                responseHeadersToAdd: [],
              },
            });
          } else {
            callback(null, {
              status: { code: status.PERMISSION_DENIED, message: 'denied' },
              deniedResponse: {
                status: { code: 403 },
                headers: [option('x-reason', 'token')],
                body: 'forbidden here',
              },
            });
          }
        },
      },
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
        error === null ? resolve(bound) : reject(error),
      ),
    );
  });
  after(() => server.forceShutdown());

  const endpoint = () => ({ address: '127.0.0.1', port });

  it('lets a request pass with the edits of the OK response, and sent the body when asked', async () => {
    const authorizer = new ExternalGrpcAuthorizer();
    const authorizerConfig = config({ forwardBodyMaxBytes: 64 });
    const decision = await authorizer.check(
      authorizerConfig,
      request({ method: 'POST', body: Buffer.from('{"a":1}') }),
      endpoint(),
    );
    authorizer.close();
    assert.equal(decision.allowed, true);
    assert.deepEqual(decision.allowed && decision.upstream.set, [['x-user', 'alice']]);
    const http = received.at(-1)!.attributes.request.http;
    assert.equal(http.method, 'POST');
    assert.equal(http.headers['x-trace'], 'a,b');
    assert.equal(Buffer.from(http.rawBody).toString(), '{"a":1}');
    assert.equal(http.size, 7);
  });

  it('answers the client with the denied response', async () => {
    const authorizer = new ExternalGrpcAuthorizer();
    const authorizerConfig = config();
    const decision = await authorizer.check(
      authorizerConfig,
      request({ headerLines: ['Host', 'shop.example', 'Authorization', 'Bearer bad'] }),
      endpoint(),
    );
    authorizer.close();
    assert.deepEqual(decision.allowed === false && [decision.status, decision.body.toString()], [
      403,
      'forbidden here',
    ]);
  });

  it('fails closed on a server that never answers, and open when configured so', async () => {
    const closed = new ExternalGrpcAuthorizer();
    const closedConfig = config({ timeoutMs: 200 });
    const hung = await closed.check(closedConfig, request({ target: '/hang' }), endpoint());
    closed.close();
    assert.deepEqual(hung.allowed === false && [hung.status, hung.reason], [403, 'timeout']);
    const open = new ExternalGrpcAuthorizer();
    const openConfig = config({ timeoutMs: 200, failOpen: true });
    const passed = await open.check(openConfig, request({ target: '/hang' }), endpoint());
    open.close();
    assert.equal(passed.allowed && passed.failedOpen, 'timeout');
  });

  it('fails closed when nothing listens', async () => {
    const authorizer = new ExternalGrpcAuthorizer();
    const authorizerConfig = config();
    const decision = await authorizer.check(authorizerConfig, request(), {
      address: '127.0.0.1',
      port: await freePort(),
    });
    authorizer.close();
    assert.deepEqual(decision.allowed === false && [decision.status, decision.reason], [403, 'error']);
  });
});

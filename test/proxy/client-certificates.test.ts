// Client certificate validation on HTTPS listeners (Gateway `spec.tls.frontend`), end to end over HTTP/1.1 and
// HTTP/2: AllowValidOnly refuses a client without a certificate, or with one of another CA, in the handshake,
// before any request is read; AllowInsecureFallback lets every client in; a config change applies to new
// connections (a new CA, the check removed) and never resumes a session past the check.
import assert from 'node:assert/strict';
import { connect as h2Connect } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import type { ClientValidation, FleetConfig, RouteAction } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { certificateAuthority, selfSigned, type TestCertificate } from '../support/certs.js';
import { fleet, listener, route, vhost } from '../support/fleet.js';

const WITHIN = { timeout: 15_000 };
const server = { name: 'default/server', ...selfSigned('www.example.com', ['www.example.com']) };
const authorityA = certificateAuthority('client CA A');
const authorityB = certificateAuthority('client CA B');
const clientA = authorityA.issueClient('client-a');
const clientB = authorityB.issueClient('client-b');
const selfSignedClient = selfSigned('client-self', ['client-self']);

const ok: RouteAction = { type: 'DirectResponse', status: 200 };

function config(strict: ClientValidation | undefined, fallback: ClientValidation | undefined): FleetConfig {
  const tls = (clientValidation: ClientValidation | undefined) => ({
    certificates: [{ hostnames: ['*'], secrets: [server.name] }],
    ...(clientValidation === undefined ? {} : { clientValidation }),
  });
  return fleet(
    [
      { listener: listener(443, tls(strict)), vhosts: [vhost(443, '*', [route(ok)])] },
      { listener: listener(8443, tls(fallback)), vhosts: [vhost(8443, '*', [route(ok)])] },
    ],
    [],
    [server],
  );
}

const onlyA: ClientValidation = { caPem: authorityA.ca.certificatePem, mode: 'AllowValidOnly' };
const onlyB: ClientValidation = { caPem: authorityB.ca.certificatePem, mode: 'AllowValidOnly' };
const fallbackA: ClientValidation = { caPem: authorityA.ca.certificatePem, mode: 'AllowInsecureFallback' };

let proxy: PorticoProxy;
const ports = { strict: 0, fallback: 0 };

before(async () => {
  proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
  await proxy.started;
  assert.equal((await proxy.apply(config(onlyA, fallbackA))).ok, true);
  const port = (name: string) => proxy.addresses().find((a) => a.listener === name)!.port;
  ports.strict = port('port-443');
  ports.fallback = port('port-8443');
});

after(() => proxy.close());

/** The status of one HTTP/1.1 request on a new TLS connection, or `refused` when the connection failed. */
function h1(port: number, client: TestCertificate | undefined): Promise<number | 'refused'> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      servername: 'www.example.com',
      ca: server.certificatePem,
      ALPNProtocols: ['http/1.1'],
      ...(client === undefined ? {} : { cert: client.certificatePem, key: client.privateKeyPem }),
    });
    let text = '';
    socket.setEncoding('latin1');
    socket.once('secureConnect', () => {
      socket.write('GET / HTTP/1.1\r\nhost: www.example.com\r\nconnection: close\r\n\r\n');
    });
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    // TLS 1.3: the client may finish its handshake before the server refuses its certificate, so a refusal
    // shows as an error or as a connection closed without any answer.
    socket.on('error', () => resolve('refused'));
    socket.on('close', () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      resolve(status === undefined ? 'refused' : Number(status));
    });
  });
}

/** The status of one HTTP/2 request on a new connection, or `refused`. */
function h2(port: number, client: TestCertificate | undefined): Promise<number | 'refused'> {
  return new Promise((resolve) => {
    const session = h2Connect(`https://www.example.com:${port}`, {
      host: '127.0.0.1',
      ca: server.certificatePem,
      ...(client === undefined ? {} : { cert: client.certificatePem, key: client.privateKeyPem }),
    });
    session.on('error', () => resolve('refused'));
    const stream = session.request({ ':path': '/' });
    stream.on('response', (headers) => {
      resolve(Number(headers[':status']));
      session.close();
    });
    stream.on('error', () => resolve('refused'));
    stream.on('close', () => {
      resolve('refused');
      session.close();
    });
    stream.end();
  });
}

/** One handshake and request on the strict port: whether it resumed, whether an answer came, its session. */
function handshake(options: { cert?: string; key?: string; session?: Buffer }): Promise<{
  reused: boolean;
  authorized: boolean;
  session: Buffer | undefined;
}> {
  return new Promise((resolve) => {
    let session: Buffer | undefined;
    let reused = false;
    let text = '';
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: ports.strict,
      servername: 'www.example.com',
      ca: server.certificatePem,
      ...options,
    });
    socket.setEncoding('latin1');
    socket.on('session', (s: Buffer) => {
      session = s;
    });
    socket.once('secureConnect', () => {
      reused = socket.isSessionReused();
      socket.write('GET / HTTP/1.1\r\nhost: www.example.com\r\nconnection: close\r\n\r\n');
    });
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve({ reused, authorized: text.startsWith('HTTP/1.1 200'), session }));
  });
}

describe('proxy: client certificate validation (frontend TLS)', () => {
  it(
    'AllowValidOnly: a client with a certificate of the CA gets its answer (HTTP/1.1, HTTP/2)',
    WITHIN,
    async () => {
      assert.equal(await h1(ports.strict, clientA), 200);
      assert.equal(await h2(ports.strict, clientA), 200);
    },
  );

  it(
    'AllowValidOnly: no certificate, another CA or a self-signed one is refused before any request',
    WITHIN,
    async () => {
      for (const client of [undefined, clientB, selfSignedClient]) {
        assert.equal(await h1(ports.strict, client), 'refused');
        assert.equal(await h2(ports.strict, client), 'refused');
      }
    },
  );

  it('AllowInsecureFallback: every client gets in, with or without a valid certificate', WITHIN, async () => {
    for (const client of [clientA, clientB, undefined]) {
      assert.equal(await h1(ports.fallback, client), 200);
      assert.equal(await h2(ports.fallback, client), 200);
    }
  });

  it(
    'a new CA applies to new connections; removing the check lets clients in without one',
    WITHIN,
    async () => {
      assert.equal((await proxy.apply(config(onlyB, fallbackA))).ok, true);
      assert.equal(await h1(ports.strict, clientB), 200);
      assert.equal(await h1(ports.strict, clientA), 'refused');
      assert.equal((await proxy.apply(config(undefined, fallbackA))).ok, true);
      assert.equal(await h1(ports.strict, undefined), 200);
      assert.equal((await proxy.apply(config(onlyA, fallbackA))).ok, true);
      assert.equal(await h1(ports.strict, undefined), 'refused');
      assert.equal(await h1(ports.strict, clientA), 200);
    },
  );

  it(
    'never resumes a session past the check: a verified session offered without a certificate is refused',
    WITHIN,
    async () => {
      const first = await handshake({ cert: clientA.certificatePem, key: clientA.privateKeyPem });
      assert.equal(first.authorized, true);
      const resumed = await handshake(first.session === undefined ? {} : { session: first.session });
      assert.equal(resumed.reused, false);
      assert.equal(resumed.authorized, false);
    },
  );
});

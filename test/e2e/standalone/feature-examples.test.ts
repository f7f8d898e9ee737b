// The HTTPS, gRPC and tracing examples in examples/, run as examples/README.md tells a user: the real
// `portico standalone`, the example's own script, and curl, openssl s_client and a gRPC client against it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ECHO_METHOD } from '../../../src/echo/grpc.js';
import { grpcClient, grpcEcho } from '../../support/h2.js';
import type { EchoBody } from '../../support/http.js';
import { startOtlpCollector } from '../../support/otlp-collector.js';
import { eventually, exampleCopy, programmedAddress, startStandalone } from './harness.js';

const run = promisify(execFile);

/** A shell command line as the README gives it; its stdout, or the error with both outputs. */
async function shell(command: string): Promise<string> {
  try {
    return (await run('sh', ['-c', command], { encoding: 'utf8', timeout: 20_000 })).stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command}\n${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

test('HTTPS: make-secret.sh, a TLS listener; curl verifies the certificate and openssl shows it', async (t) => {
  const { dir, files, stateDir } = await exampleCopy(t, 'https', ['tls']);
  const secrets = join(dir, 'secret');
  assert.match(await shell(`sh ${files}/make-secret.sh ${secrets}`), /wrote .*secret\.yaml/);
  const c = await startStandalone(t, {
    args: ['-f', files, '-f', join(secrets, 'secret.yaml')],
    pool: '127.0.81.0/24',
    stateDir,
  });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const curl = `curl -sS -i --cacert ${secrets}/tls.crt --resolve www.example.com:8443:${address} https://www.example.com:8443/`;
  const reply = await eventually('an HTTPS 200 through the proxy', async () => {
    const out = await shell(curl);
    return /^HTTP\/\S+ 200/.test(out) ? out : undefined;
  });
  assert.match(reply, /^server: portico\r$/m);
  const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as EchoBody;
  assert.equal(body.pod, 'tls');
  // The echo backend names headers in their canonical form, as Go's does.
  assert.deepEqual(body.headers['X-Forwarded-Proto'], ['https']);

  const handshake = await shell(
    `openssl s_client -connect ${address}:8443 -servername www.example.com -CAfile ${secrets}/tls.crt -verify_return_error </dev/null`,
  );
  assert.match(handshake, /subject=CN ?= ?www\.example\.com/);
  assert.match(handshake, /Verify return code: 0 \(ok\)/);
  // A client that does not trust the certificate is refused by curl, as it should be.
  await assert.rejects(
    shell(`curl -sS --resolve www.example.com:8443:${address} https://www.example.com:8443/`),
  );

  // A new certificate written over the Secret's file is served without a restart: curl trusting only the new one
  // gets through.
  const before = await readFile(join(secrets, 'tls.crt'), 'utf8');
  await shell(`sh ${files}/make-secret.sh ${secrets}`);
  assert.notEqual(await readFile(join(secrets, 'tls.crt'), 'utf8'), before);
  await eventually('the new certificate served', async () => {
    const out = await shell(curl).catch(() => '');
    return /^HTTP\/\S+ 200/.test(out) ? out : undefined;
  });
});

test('gRPC: a GRPCRoute answers a grpc-js client and curl over h2c; another method is UNIMPLEMENTED', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'grpc', ['grpc-echo']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.82.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const client = grpcClient(8080, 'grpc.example.com', address);
  t.after(() => client.close());
  const reply = await eventually('a gRPC call through the proxy', () =>
    grpcEcho(client, 'hello', ECHO_METHOD, 5_000).catch(() => undefined),
  );
  assert.deepEqual([reply.message, reply.pod, reply.authority], ['hello', 'grpc-echo', 'grpc.example.com']);

  const curl = `printf '\\0\\0\\0\\0\\4\\n\\2hi' | curl -sS --http2-prior-knowledge -H 'Host: grpc.example.com' -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @- -D - --output - http://${address}:8080/portico.echo.v1.Echo/Echo | tr -c '[:print:]\\n' .`;
  const out = await shell(curl);
  assert.match(out, /^HTTP\/2 200/);
  assert.match(out, /^content-type: application\/grpc/m);
  assert.match(out, /hi.*grpc-echo.*grpc\.example\.com/);
  // curl prints the trailers right after the (binary) body.
  assert.match(out, /grpc-status: 0/);
  const other = await shell(curl.replace('Echo/Echo', 'Echo/Missing'));
  assert.match(other, /grpc-status: 12/, other);
});

test('tracing: the class DataPlaneProxy exports a span per request to the collector, traceparent goes on', async (t) => {
  const collector = await startOtlpCollector();
  t.after(() => collector.close());
  const { files, stateDir } = await exampleCopy(t, 'tracing', ['traced']);
  // The collector of the test, not the README's 127.0.0.1:4318 (which another program may hold).
  const file = join(files, 'resources.yaml');
  const text = await readFile(file, 'utf8');
  assert.ok(text.includes('http://127.0.0.1:4318/v1/traces'));
  await writeFile(file, text.replace('http://127.0.0.1:4318/v1/traces', collector.endpoint));
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.83.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');

  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const curl = `curl -sS -H 'Host: www.example.com' -H 'traceparent: 00-${traceId}-00f067aa0ba902b7-01' http://${address}:8080/`;
  const body = await eventually('a 200 through the traced proxy', async () => {
    const out = await shell(curl).catch(() => undefined);
    return out?.startsWith('{') === true ? (JSON.parse(out) as EchoBody) : undefined;
  });
  assert.equal(body.pod, 'traced');
  const forwarded = body.headers.Traceparent?.[0] ?? '';
  assert.match(forwarded, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  assert.ok(!forwarded.includes('00f067aa0ba902b7'), 'the backend sees the proxy span as its parent');
  const span = await eventually('the span at the collector', async () =>
    collector.spans.find((s) => s.traceId === traceId),
  );
  assert.equal(span.parentSpanId, '00f067aa0ba902b7');
  assert.equal(span.spanId, forwarded.split('-')[2]);
});

test('traffic: a redirect, a rewrite with header edits, a 90/10 split and a timeout, seen with curl', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'traffic', ['stable', 'canary']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.84.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const curl = (rest: string) => shell(`curl -sS -H 'Host: app.example.com' ${rest}`);
  const moved = await eventually('the redirect', async () => {
    const out = await curl(`-i http://${address}:8080/old/users`).catch(() => '');
    return /^HTTP\/1\.1 301/.test(out) ? out : undefined;
  });
  assert.match(moved, /^location: http:\/\/app\.example\.com:8080\/v2\/users\r$/m);

  const rewritten = await curl(`-i 'http://${address}:8080/v2/users?id=1'`);
  assert.match(rewritten, /^HTTP\/1\.1 200/);
  assert.match(rewritten, /^cache-control: no-store\r$/m);
  const seen = JSON.parse(rewritten.slice(rewritten.indexOf('\r\n\r\n') + 4)) as EchoBody;
  assert.equal(seen.pod, 'stable');
  assert.equal(seen.path, '/users?id=1');
  assert.deepEqual(seen.headers['X-Api-Version'], ['2']);

  // The README's count: 200 requests in one curl (its URL range), the answering backend of each tallied (the
  // echo names itself in `service`).
  const tally = await curl(
    `'http://${address}:8080/?n=[1-200]' | grep -o '"service":"[^"]*"' | sort | uniq -c`,
  );
  const counts = new Map(
    [...tally.matchAll(/(\d+) "service":"([a-z]+)"/g)].map((m) => [m[2], Number(m[1])] as const),
  );
  const stable = counts.get('stable') ?? 0;
  const canary = counts.get('canary') ?? 0;
  assert.equal(stable + canary, 200, tally);
  // 20 expected; 1..60 holds but for a split off by more than nine standard deviations.
  assert.ok(canary >= 1 && canary <= 60, tally);

  const slow = await curl(`-o /dev/null -w '%{http_code}' 'http://${address}:8080/slow?delay=5s'`);
  assert.equal(slow, '504');
});

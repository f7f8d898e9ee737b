// The layer-4 example in examples/, run as examples/README.md tells a user: the real `portico standalone`, the
// example's make-cert.sh, `openssl s_server` as the TLS backend, curl through the TCP listener and through the
// TLS passthrough listener (trusting only the backend's certificate: the proxy never ends that TLS), and an
// unknown server name refused (the connection closed before any certificate).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { EchoBody } from '../../support/http.js';
import { defer, eventually, exampleCopy, programmedAddress, startStandalone } from './harness.js';

const run = promisify(execFile);

async function shell(command: string): Promise<string> {
  try {
    return (await run('sh', ['-c', command], { encoding: 'utf8', timeout: 20_000 })).stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command}\n${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  server.close();
  return port;
}

test('layer 4: a TCPRoute to the echo backend and a TLSRoute passed through to openssl s_server', async (t) => {
  const { dir, files, stateDir } = await exampleCopy(t, 'layer4', ['tcp']);
  const certs = join(dir, 'cert');
  assert.match(await shell(`sh ${files}/make-cert.sh ${certs}`), /wrote .*tls\.crt/);
  // The TLS backend on a free port, and the example's EndpointSlice pointed at it.
  const tlsPort = await freePort();
  const resources = join(files, 'resources.yaml');
  await writeFile(resources, (await readFile(resources, 'utf8')).replace('port: 3443', `port: ${tlsPort}`));
  const backend = spawn(
    'openssl',
    [
      's_server',
      '-accept',
      `127.0.0.1:${tlsPort}`,
      '-cert',
      `${certs}/tls.crt`,
      '-key',
      `${certs}/tls.key`,
      '-www',
      '-quiet',
    ],
    { stdio: 'ignore' },
  );
  defer(t, () => {
    backend.kill();
  });
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.84.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');

  const echo = await eventually('an HTTP reply through the TCP listener', async () => {
    const out = await shell(`curl -sS -m 5 http://${address}:9000/ || true`);
    return out.startsWith('{') ? out : undefined;
  });
  assert.equal((JSON.parse(echo) as EchoBody).pod, 'tcp');

  const secure = `curl -sS -m 5 -o /dev/null -w '%{http_code}' --cacert ${certs}/tls.crt --resolve secure.example.com:9443:${address} https://secure.example.com:9443/`;
  assert.equal(
    await eventually('a verified HTTPS 200 from the backend', async () => {
      const out = await shell(`${secure} || true`);
      return out === '200' ? out : undefined;
    }),
    '200',
  );
  const refused = await shell(
    `openssl s_client -connect ${address}:9443 -servername other.example.org </dev/null 2>&1 || true`,
  );
  // Closed before any server hello: openssl reads no certificate.
  assert.match(refused, /no peer certificate available|unexpected eof|errno|write:errno/i);
});

// A standalone proxy's access log: on by default, one JSON line per request in a file beside its own log, and
// the format and tracing a DataPlaneProxy sets taking over when the class refers to it (the proxy restarts with
// them): spans reach an OTLP/HTTP collector the test runs on loopback.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import { attributeOf, startOtlpCollector } from '../../support/otlp-collector.js';
import { eventually, exampleCopy, programmedAddress, send, startStandalone, untilStatus } from './harness.js';

const textLogAndTracing = (collectorPort: number) => `apiVersion: gateway.portico.io/v1alpha1
kind: DataPlaneProxy
metadata: {name: text-log, namespace: default}
spec:
  telemetry:
    accessLog: {format: Text, fields: [method, path, status, request_id]}
    tracing: {endpoint: 'http://127.0.0.1:${collectorPort}/v1/traces'}
`;

async function linesOf(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter((l) => l !== '');
}

test("a standalone proxy logs each request in its access log file, in the format its class's DataPlaneProxy sets", async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.43.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  const file = join(stateDir, 'logs', `${fleetInfraName('default/eg')}.access.log`);

  const sent = await send(address, 8080, 'www.example.com', '/api/users?id=7');
  assert.equal(sent.status, 200);
  const json = await eventually('a JSON access log line for the request', async () =>
    (await linesOf(file)).map((l) => JSON.parse(l)).find((e) => e.path === '/api/users?id=7'),
  );
  assert.equal(json.method, 'GET');
  assert.equal(json.authority, 'www.example.com');
  assert.equal(json.status, 200);
  assert.equal(json.listener, 'port-8080');
  assert.match(json.upstream_host, /^127\.0\.0\.1:\d+$/);
  assert.match(json.request_id, /^[0-9a-f-]{36}$/);

  // The class now refers to a DataPlaneProxy with a Text log of four fields and tracing to the collector.
  const collector = await startOtlpCollector();
  t.after(() => collector.close());
  await writeFile(join(files, 'params.yaml'), textLogAndTracing(collector.port));
  const gatewayFile = join(files, 'gateway.yaml');
  const gateway = await readFile(gatewayFile, 'utf8');
  await writeFile(
    gatewayFile,
    gateway.replace(
      'controllerName: gateway.portico.io/gatewayclass-controller',
      'controllerName: gateway.portico.io/gatewayclass-controller\n  parametersRef: {group: gateway.portico.io, kind: DataPlaneProxy, name: text-log, namespace: default}',
    ),
  );
  const text = await eventually('a text access log line once the proxy took the new format', async () => {
    await send(address, 8080, 'www.example.com', '/text', false).catch(() => undefined);
    return (await linesOf(file)).find((l) => l.startsWith('method=GET path=/text '));
  });
  assert.match(text, /^method=GET path=\/text status=200 request_id=[0-9a-f-]{36}$/);
  await eventually(
    'the span of a request at the collector',
    async () => collector.spans.some((s) => attributeOf(s, 'url.path') === '/text') || undefined,
  );
});

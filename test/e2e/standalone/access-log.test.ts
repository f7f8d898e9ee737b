// A standalone proxy's access log: on by default, one JSON line per request in a file beside its own log, and
// the format, tracing, log level, drain and workers a DataPlaneProxy sets taking over when the class refers to
// it, in place under traffic: the same proxy process takes them, no request fails, and spans reach an OTLP/HTTP
// collector the test runs on loopback.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import { PORTS } from '../../../src/ir/well-known.js';
import { attributeOf, startOtlpCollector } from '../../support/otlp-collector.js';
import { parsePrometheus, sampleValue } from '../../support/prometheus.js';
import { traffic } from '../../support/traffic.js';
import {
  adminGet,
  eventually,
  exampleCopy,
  programmedAddress,
  send,
  startStandalone,
  untilStatus,
} from './harness.js';

const PARAMS_HEAD = `apiVersion: gateway.portico.io/v1alpha1
kind: DataPlaneProxy
metadata: {name: text-log, namespace: default}
spec:
  workers: 2
`;

const textLogAndTracing = (
  collectorPort: number,
) => `${PARAMS_HEAD.replace('workers: 2', 'workers: 3')}  logLevel: debug
  drainSeconds: 30
  telemetry:
    accessLog: {format: Text, fields: [method, path, status, request_id], redactQueryParameters: [token]}
    tracing: {endpoint: 'http://127.0.0.1:${collectorPort}/v1/traces'}
`;

interface FleetView {
  fleet: string;
  process?: { pid?: number; restarts: number; health: string };
}

async function linesOf(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter((l) => l !== '');
}

test("a standalone proxy logs each request in its access log file, in the format its class's DataPlaneProxy sets", async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  // The class refers to a DataPlaneProxy that sets two workers and nothing else: the access log is its default.
  await writeFile(join(files, 'params.yaml'), PARAMS_HEAD);
  const gatewayFile = join(files, 'gateway.yaml');
  const gateway = await readFile(gatewayFile, 'utf8');
  await writeFile(
    gatewayFile,
    gateway.replace(
      'controllerName: gateway.portico.io/gatewayclass-controller',
      'controllerName: gateway.portico.io/gatewayclass-controller\n  parametersRef: {group: gateway.portico.io, kind: DataPlaneProxy, name: text-log, namespace: default}',
    ),
  );
  const c = await startStandalone(t, {
    args: ['-f', files],
    pool: '127.0.43.0/24',
    stateDir,
    proxyWorkersMax: 3,
  });
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

  const before = await eventually('the fleet process, live', async () => {
    const fleets = await adminGet<{ items: FleetView[] }>(c.admin, '/api/fleets');
    const p = fleets.items.find((f) => f.fleet === 'default/eg')?.process;
    return p?.health === 'live' ? p : undefined;
  });

  // Its DataPlaneProxy now sets a Text log of four fields, tracing to the collector, another log level, drain
  // and worker count: all of them settings the running proxy takes in place, under traffic.
  const load = traffic(4, (agent) => send(address, 8080, 'www.example.com', '/during', agent));
  const collector = await startOtlpCollector();
  t.after(() => collector.close());
  await writeFile(join(files, 'params.yaml'), textLogAndTracing(collector.port));
  const text = await eventually('a text access log line once the proxy took the new format', async () => {
    await send(address, 8080, 'www.example.com', '/text', false).catch(() => undefined);
    return (await linesOf(file)).find((l) => l.startsWith('method=GET path=/text '));
  });
  assert.match(text, /^method=GET path=\/text status=200 request_id=[0-9a-f-]{36}$/);
  // The class's redaction reached every worker: a token in a query is never written.
  assert.equal((await send(address, 8080, 'www.example.com', '/text?token=s3cret&q=1', false)).status, 200);
  await eventually('a line whose token is redacted', async () =>
    (await linesOf(file)).find((l) => l.startsWith('method=GET path=/text?token=REDACTED&q=1 ')),
  );
  assert.ok(!(await readFile(file, 'utf8')).includes('s3cret'), 'the token is in no line');
  await eventually(
    'the span of a request at the collector',
    async () => collector.spans.some((s) => attributeOf(s, 'url.path') === '/text') || undefined,
  );
  const metricsUrl = `http://${address}:${PORTS.metrics}/metrics`;
  await eventually('three workers serving', async () =>
    sampleValue(parsePrometheus(await (await fetch(metricsUrl)).text()), 'portico_proxy_workers') === 3
      ? true
      : undefined,
  );
  const during = await load.stop();
  assert.deepEqual(
    during.failures,
    [],
    `${during.failures.length} of ${during.sent} requests failed while the settings changed`,
  );
  const after = (await adminGet<{ items: FleetView[] }>(c.admin, '/api/fleets')).items.find(
    (f) => f.fleet === 'default/eg',
  );
  assert.equal(after?.process?.pid, before.pid, 'the same proxy process took the new settings');
  assert.equal(after?.process?.restarts, 0);
  const proxyLog = await readFile(join(stateDir, 'logs', `${fleetInfraName('default/eg')}.log`), 'utf8');
  assert.match(proxyLog, /3 workers \(1 added, 0 let go\)/);
});

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PORTICO_MAIN, REPO_ROOT } from '../support/portico.js';
import { withTestCertificates } from '../translate/testdata-certificates.js';

const TESTDATA = join(REPO_ROOT, 'test/translate/testdata');

function portico(...args: string[]) {
  // Bounded: a translate that hangs (e.g. reading a FIFO) fails its test instead of stalling the run.
  return spawnSync(process.execPath, [PORTICO_MAIN, 'translate', ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
}

test('translate prints input objects with their computed status', () => {
  const r = portico('-f', join(TESTDATA, 'basic.in.yaml'));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /kind: Gateway\n/);
  assert.match(r.stdout, /reason: AddressNotAssigned/);
  assert.doesNotMatch(r.stdout, /someone-else/);
});

test('translate prints GRPCRoutes with their status and their h2c clusters in the fleet config', () => {
  const r = portico('-f', join(TESTDATA, 'grpc-backends.in.yaml'), '--show', 'status,config', '-o', 'json');
  assert.equal(r.status, 0, r.stderr);
  const docs = JSON.parse(r.stdout) as {
    kind?: string;
    metadata?: { name: string };
    status?: { parents?: { conditions: { type: string; reason: string }[] }[] };
    clusters?: { name: string; protocol: string }[];
  }[];
  const route = docs.find((d) => d.kind === 'GRPCRoute' && d.metadata?.name === 'api');
  assert.deepEqual(
    route?.status?.parents?.[0]?.conditions.map((c) => `${c.type}=${c.reason}`),
    ['Accepted=Accepted', 'ResolvedRefs=RefNotPermitted'],
  );
  const fleet = docs.find((d) => d.clusters !== undefined);
  assert.ok(fleet?.clusters?.some((c) => c.name === 'apps/multi:8080/h2c' && c.protocol === 'h2c'));
});

test('translate --show config,infra -o json: fleet configs with private keys redacted, rendered objects', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-translate-'));
  const input = join(dir, 'listeners.yaml');
  writeFileSync(input, withTestCertificates(readFileSync(join(TESTDATA, 'listeners.in.yaml'), 'utf8')));
  const r = portico('-f', input, '--show', 'config,infra', '-o', 'json');
  assert.equal(r.status, 0, r.stderr);
  const docs = JSON.parse(r.stdout) as {
    kind?: string;
    fleet?: string;
    secrets?: { privateKeyPem: string }[];
  }[];
  const fleet = docs.find((d) => d.fleet === 'default/tls');
  assert.ok(fleet?.secrets !== undefined && fleet.secrets.length === 2);
  for (const s of fleet.secrets) assert.equal(s.privateKeyPem, '<redacted>');
  assert.doesNotMatch(r.stdout, /BEGIN PRIVATE KEY/);
  assert.deepEqual(
    docs.filter((d) => d.kind !== undefined).map((d) => d.kind),
    ['ServiceAccount', 'Service', 'Deployment'],
  );
});

test('translate exits 1 naming file and line when input cannot be loaded', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-translate-'));
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, 'apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: -1}]\n');
  const r = portico('-f', file);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /bad\.yaml:5: Service default\/s: spec\.ports\[0\]\.port: must be ≥ 1/);
});

test('translate reports a bad controller configuration with its field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-translate-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    'apiVersion: gateway.portico.io/v1alpha1\nkind: PorticoGateway\nprovider:\n  kubernetes:\n    watch: {type: Namespaces}\n',
  );
  const r = portico('-f', join(TESTDATA, 'basic.in.yaml'), '--config', config);
  assert.equal(r.status, 1);
  assert.match(
    r.stderr,
    /config\.yaml:5: PorticoGateway: provider\.kubernetes\.watch\.namespaces: required when type is Namespaces/,
  );
});

test('translate without -f is a usage error', () => {
  const r = portico();
  assert.equal(r.status, 2);
  assert.match(r.stderr, /at least one -f PATH/);
});

test('translate reports a hostile YAML file with file and line, no stack trace, and loads the rest', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-translate-'));
  const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++) {
    const [name, prev] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
    levels.push(`${name}: &${name} [${Array(10).fill(`*${prev}`).join(', ')}]`);
  }
  writeFileSync(
    join(dir, 'a-bomb.yaml'),
    `kind: Namespace\napiVersion: v1\nmetadata: {name: x}\nspec:\n  ${levels.join('\n  ')}\n`,
  );
  writeFileSync(
    join(dir, 'b-ok.yaml'),
    'apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: fine}\nspec: {controllerName: gateway.portico.io/gatewayclass-controller}\n',
  );
  const config = join(dir, 'config.yaml');
  // A benign configuration with more than 100 alias references.
  const paths = Array(150).fill('*p').join(', ');
  writeFileSync(
    config,
    `apiVersion: gateway.portico.io/v1alpha1\nkind: PorticoGateway\nprovider:\n  standalone: {paths: [&p a, ${paths}]}\n`,
  );
  const r = portico('-f', dir, '--show', 'status');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /a-bomb\.yaml:1: YAML: the document expands to more than/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  assert.match(r.stdout, /name: fine/);
  const c = portico('-f', join(dir, 'b-ok.yaml'), '--config', config);
  assert.equal(c.status, 0, c.stderr);
  assert.match(c.stdout, /name: fine/);
});

test('translate on a folder holding a FIFO reports it and finishes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-translate-'));
  writeFileSync(join(dir, 'a.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n');
  execFileSync('mkfifo', [join(dir, 'fifo.yaml')]);
  const r = portico('-f', dir);
  assert.equal(r.status, 1, `exit status (null: killed after hanging): ${r.stderr}`);
  assert.match(r.stderr, /fifo\.yaml: a FIFO, not a regular file: not read/);
});

test('translate refuses a misspelled field, naming file, line and field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-translate-'));
  const file = join(dir, 'route.yaml');
  writeFileSync(
    file,
    'apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  hostname: [a.example.com]\n',
  );
  const r = portico('-f', file);
  assert.equal(r.status, 1);
  assert.match(
    r.stderr,
    /route\.yaml:5: HTTPRoute default\/r: spec\.hostname: unknown field \(did you mean 'hostnames'\?\)/,
  );
});

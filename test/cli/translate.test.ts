import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PORTICO_MAIN, REPO_ROOT } from '../support/portico.js';

const TESTDATA = join(REPO_ROOT, 'test/translate/testdata');

function portico(...args: string[]) {
  return spawnSync(process.execPath, [PORTICO_MAIN, 'translate', ...args], { encoding: 'utf8' });
}

test('translate prints input objects with their computed status', () => {
  const r = portico('-f', join(TESTDATA, 'basic.in.yaml'));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /kind: Gateway\n/);
  assert.match(r.stdout, /reason: AddressNotAssigned/);
  assert.doesNotMatch(r.stdout, /someone-else/);
});

test('translate --show config,infra -o json: fleet configs with private keys redacted, rendered objects', () => {
  const r = portico('-f', join(TESTDATA, 'listeners.in.yaml'), '--show', 'config,infra', '-o', 'json');
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
    ['ServiceAccount', 'Deployment', 'Service'],
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

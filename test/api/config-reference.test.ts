// docs/configuration.md is what scripts/config-reference.ts writes from the schemas as they are today, and the
// fields a user sets most (the controller configuration, DataPlaneProxy's own fields) each say what they do.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CONFIG_REFERENCE, renderConfigReference } from '../../scripts/config-reference.js';

const page = renderConfigReference();

/** The `what it does` cell of the row for `field`, or undefined when the page has no such row. */
function description(field: string): string | undefined {
  const row = page.split('\n').find((line) => line.startsWith(`| \`${field}\` |`));
  return row?.split(' | ').at(-1)?.replace(/ \|$/, '').trim();
}

test('docs/configuration.md is what scripts/config-reference.ts writes from the schemas', () => {
  assert.equal(
    readFileSync(CONFIG_REFERENCE, 'utf8'),
    page,
    'run node --import tsx scripts/config-reference.ts',
  );
});

test('every field of the controller configuration and of DataPlaneProxy spec says what it does', () => {
  for (const field of [
    'gateway.controllerName',
    'provider.type',
    'provider.kubernetes.deploy.type',
    'provider.kubernetes.watch',
    'provider.kubernetes.watch.namespaces',
    'provider.kubernetes.watch.namespaceSelector',
    'provider.standalone.paths',
    'spec.mergeGateways',
    'spec.workers',
    'spec.drainSeconds',
    'spec.kubernetes',
    'spec.logLevel',
    'spec.telemetry.accessLog',
    'spec.telemetry.tracing.endpoint',
  ]) {
    const text = description(field);
    assert.notEqual(text, undefined, `no row for ${field}`);
    assert.ok((text ?? '').length > 10, `${field} has no description`);
  }
});

test('types, limits and defaults come from the schemas; fields Portico ignores say so', () => {
  assert.match(page, /^\| `spec\.workers` \| integer, 1–1024 \| {2}\|/m);
  assert.match(page, /^\| `provider\.type` \| `Kubernetes` \\\| `Standalone` \| `"Kubernetes"` \|/m);
  assert.match(page, /^\| `spec\.hostnames` \| list of string/m);
  assert.match(description('spec.backendTLS') ?? '', /^Not implemented/);
  assert.match(page, /^\| `limits\.maxHeaderSize` \| number \| `16384` \| Largest request head/m);
});

// The DataPlaneProxy CRD the chart installs and Portico's own schema (standalone mode, `portico translate`) name
// the same fields with the same enums, so a file that loads is one the API server takes and the other way round.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Kind, type TSchema } from '@sinclair/typebox';
import { parse } from 'yaml';
import { DataPlaneProxySchema } from '../../src/api/data-plane-proxy.js';

type Json = Record<string, unknown>;

const crd = parse(
  readFileSync('charts/gateway-helm/crds/gateway.portico.io_dataplaneproxies.yaml', 'utf8'),
) as Json;
const crdSpec = (crd.spec as { versions: { schema: { openAPIV3Schema: Json } }[] }).versions[0]!.schema
  .openAPIV3Schema.properties as Json;

function enumOf(s: TSchema): string[] | undefined {
  const anyOf = s.anyOf as TSchema[] | undefined;
  if (anyOf === undefined || !anyOf.every((a) => typeof a.const === 'string')) return undefined;
  return anyOf.map((a) => a.const as string);
}

/** Every difference between the two schemas below `at`, one line each. */
function differences(ours: TSchema, theirs: Json, at: string): string[] {
  if (ours[Kind] === 'Unknown' || theirs['x-kubernetes-preserve-unknown-fields'] === true) return [];
  const out: string[] = [];
  const values = enumOf(ours);
  if (values !== undefined && JSON.stringify(values) !== JSON.stringify(theirs.enum))
    out.push(`${at}: enum ${values.join(',')} here, ${String(theirs.enum)} in the CRD`);
  if (ours[Kind] === 'Array')
    out.push(...differences(ours.items as TSchema, theirs.items as Json, `${at}[]`));
  if (ours[Kind] !== 'Object') return out;
  const mine = ours.properties as Record<string, TSchema>;
  const crdFields = (theirs.properties ?? {}) as Record<string, Json>;
  for (const name of new Set([...Object.keys(mine), ...Object.keys(crdFields)])) {
    const a = mine[name];
    const b = crdFields[name];
    if (a === undefined || b === undefined)
      out.push(`${at}.${name}: only ${a === undefined ? 'in the CRD' : 'here'}`);
    else out.push(...differences(a, b, `${at}.${name}`));
  }
  return out;
}

test('spec.kubernetes, logLevel, drainSeconds, workers: the CRD and Portico’s schema declare the same fields and enums', () => {
  const spec = DataPlaneProxySchema.properties.spec as TSchema;
  const crdSpecSchema = crdSpec.spec as Json;
  for (const field of ['kubernetes', 'logLevel', 'drainSeconds', 'workers', 'mergeGateways']) {
    assert.deepEqual(
      differences(spec.properties[field], (crdSpecSchema.properties as Json)[field] as Json, `spec.${field}`),
      [],
    );
  }
});

test('the CRD says each rule the translator checks with a CEL rule of its own', () => {
  const text = readFileSync('charts/gateway-helm/crds/gateway.portico.io_dataplaneproxies.yaml', 'utf8');
  for (const rule of [
    '!(has(self.deployment) && has(self.daemonSet))',
    '!(has(self.daemonSet) && has(self.horizontalPodAutoscaler))',
    'self.minReplicas <= self.maxReplicas',
    'has(self.minAvailable) != has(self.maxUnavailable)',
    "!(self.name in ['POD_NAME', 'POD_NAMESPACE'])",
    '!has(self.privileged) || !self.privileged',
    'self.kubernetes.pod.terminationGracePeriodSeconds >= (has(self.drainSeconds) ? self.drainSeconds : 60) + 10',
  ]) {
    assert.ok(text.includes(rule.replaceAll("'", "''")) || text.includes(rule), rule);
  }
});

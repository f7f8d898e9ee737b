// Every regular expression a tenant writes (HTTPRoute path, header and query param matches, GRPCRoute method
// service and method) is bounded in length and size and runs on RE2 (re2js) only: the translator refuses one too
// long with the field named, the proxy's config validation refuses it too, and what runs is RE2 — shown by
// input, not by a clock: RE2-only syntax compiles, JavaScript-only syntax is refused, and `(a+)+$` answers for an
// input no backtracking engine could finish in the life of the universe.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatResourceError } from '../../src/api/common.js';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { compileRegex, MAX_REGEX_LENGTH, regexProblem } from '../../src/ir/field-rules.js';
import { validateFleetConfig } from '../../src/ir/validate.js';
import { PorticoError } from '../../src/platform/errors.js';
import { translate } from '../../src/translate/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';

const CONTROLLER = 'gateway.portico.io/gatewayclass-controller';

/**
 * A pattern of `length` characters whose RE2 program is tiny (one character class): only a length bound refuses
 * it, the program-size bound does not.
 */
function longClass(length: number): string {
  return `[${'a'.repeat(length - 2)}]`;
}

/** The Accepted condition of each route of `routes` (YAML documents), keyed by route name. */
function accepted(routes: string): Record<string, { status: string; reason: string; message: string }> {
  const text = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: ${CONTROLLER}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: eg
  listeners: [{name: http, protocol: HTTP, port: 80}]
${routes}`;
  const loaded = parseYamlFile('routes.yaml', text);
  assert.deepEqual(loaded.errors.map(formatResourceError), []);
  const result = translate(buildSnapshot(loaded.objects.map((o) => o.object)), {
    controllerName: CONTROLLER,
    controllerNamespace: 'sys',
    deployType: 'ControllerNamespace',
  });
  const out: Record<string, { status: string; reason: string; message: string }> = {};
  for (const s of result.statuses) {
    if (s.kind !== 'HTTPRoute' && s.kind !== 'GRPCRoute') continue;
    const parents = (
      s.status as {
        parents: { conditions: { type: string; status: string; reason: string; message: string }[] }[];
      }
    ).parents;
    const condition = parents[0]!.conditions.find((c) => c.type === 'Accepted')!;
    out[s.name] = { status: condition.status, reason: condition.reason, message: condition.message };
  }
  return out;
}

test('a regular expression longer than the bound is refused by the translator, naming its field', () => {
  // The schema lets a header value be 4,096 characters long (path and query values 1,024, as the bound).
  const long = longClass(MAX_REGEX_LENGTH + 1);
  const fits = longClass(MAX_REGEX_LENGTH);
  // Each fits, but the method path pattern they make up (`/(?:service)/(?:method)`) does not.
  const half = longClass(600);
  const routes = `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: long-header, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{headers: [{type: RegularExpression, name: x-a, value: "${long}"}]}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: long-method, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{method: {type: RegularExpression, service: "${half}", method: "${half}"}}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: fits, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules: [{matches: [{headers: [{type: RegularExpression, name: x-a, value: "${fits}"}]}]}]
`;
  const conditions = accepted(routes);
  const tooLong = (n: number) => `regular expression too long (${n} characters, at most ${MAX_REGEX_LENGTH})`;
  assert.deepEqual(conditions['long-header'], {
    status: 'False',
    reason: 'UnsupportedValue',
    message: `spec.rules[0].matches[0].headers[0].value: ${tooLong(MAX_REGEX_LENGTH + 1)}`,
  });
  assert.equal(conditions['long-method']?.message, `spec.rules[0].matches[0].method: ${tooLong(1210)}`);
  assert.equal(conditions.fits?.status, 'True');
});

test('the proxy refuses a fleet config with a regular expression over the bound, naming its field', () => {
  const config = simpleFleet(
    [
      vhost(80, 'a.test', [
        route(forward(['default/a:80']), {
          headers: [{ type: 'RegularExpression', name: 'x-a', value: longClass(MAX_REGEX_LENGTH + 1) }],
        }),
      ]),
    ],
    [upstream('default/a:80', [8080])],
  );
  assert.throws(
    () => validateFleetConfig(config),
    (error: unknown) =>
      error instanceof PorticoError &&
      /routes\[0\]\.match\.headers\[0\]\.value: regular expression too long/.test(error.message),
  );
  // A huge pattern is refused by its length, before anything parses it.
  assert.match(String(regexProblem('a'.repeat(10_000_000))), /too long \(10000000 characters/);
});

test('patterns run on RE2: its syntax compiles, JavaScript-only syntax is refused', () => {
  // Inline flags are RE2 syntax that Node 20's RegExp refuses.
  const inlineFlags = '(?i)admin';
  assert.equal(compileRegex(inlineFlags)('ADMIN'), true);
  assert.throws(() => new RegExp(inlineFlags));
  // Backreferences and lookaround are JavaScript's, not RE2's: they cannot run in linear time.
  assert.match(String(regexProblem('(a)\\1')), /not a regular expression RE2 can run/);
  assert.match(String(regexProblem('a(?=b)')), /not a regular expression RE2 can run/);
  assert.match(String(regexProblem('(?<=a)b')), /not a regular expression RE2 can run/);
});

test('(a+)+$ answers for an input a backtracking engine could never finish', () => {
  // A backtracking engine tries about 2^n ways to split n a's before it fails on the '!': here n is 100,000.
  const matches = compileRegex('(a+)+$');
  assert.equal(matches(`${'a'.repeat(100_000)}!`), false);
  assert.equal(matches('a'.repeat(100_000)), true);
  const nested = compileRegex('(x+x+)+y');
  assert.equal(nested('x'.repeat(100_000)), false);
});

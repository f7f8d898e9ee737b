import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateFleetConfig } from '../../src/ir/validate.js';
import { PorticoError } from '../../src/platform/errors.js';
import { forward, listener, route, simpleFleet, upstream, vhost } from '../support/fleet.js';

function valid() {
  return simpleFleet(
    [vhost(80, 'a.test', [route(forward(['default/a:80']))])],
    [upstream('default/a:80', [8080])],
  );
}

function rejects(
  mutate: (config: Record<string, unknown> & ReturnType<typeof valid>) => void,
  pattern: RegExp,
): void {
  const config = structuredClone(valid()) as Record<string, unknown> & ReturnType<typeof valid>;
  mutate(config);
  assert.throws(
    () => validateFleetConfig(config),
    (error: unknown) =>
      error instanceof PorticoError && error.code === 'E_FLEET_CONFIG' && pattern.test(error.message),
  );
}

describe('validateFleetConfig', () => {
  it('accepts a valid config and returns it', () => {
    const config = valid();
    assert.equal(validateFleetConfig(config), config);
  });

  it('refuses another schema version', () => {
    // 2 is the schema before clusters' `tls`: a proxy must refuse it rather than send TLS backends plaintext.
    rejects((c) => Object.assign(c, { schemaVersion: 2 }), /^schemaVersion: must be 3 \(got 2\)/);
  });

  it('names the field path of a wrong type', () => {
    rejects(
      (c) => Object.assign(c.listeners[0]!, { port: 70000 }),
      /^listeners\[0\]\.port: must be an integer/,
    );
    rejects(
      (c) => Object.assign(c.virtualHosts[0]!.routes[0]!.match, { path: { type: 'Glob', value: '/' } }),
      /routes\[0\]\.match\.path\.type: must be one of/,
    );
  });

  it('refuses a regular expression that does not compile', () => {
    rejects(
      (c) =>
        Object.assign(c.virtualHosts[0]!.routes[0]!.match, {
          path: { type: 'RegularExpression', value: '([' },
        }),
      /match\.path\.value: not a regular expression RE2 can run/,
    );
  });

  it('refuses dangling references and duplicates', () => {
    rejects(
      (c) =>
        Object.assign(c.virtualHosts[0]!, {
          listener: 'port-81',
          name: `port-81/${c.virtualHosts[0]!.hostname}`,
        }),
      /virtualHosts\[0\]\.listener: unknown listener 'port-81'/,
    );
    rejects(
      (c) => Object.assign(c.virtualHosts[0]!, { name: 'port-80/elsewhere.example.com' }),
      /virtualHosts\[0\]\.name: must be 'port-80\/[^']+'/,
    );
    rejects(
      (c) =>
        Object.assign(c.virtualHosts[0]!.routes[0]!.action, {
          backends: [{ weight: 1, cluster: 'x', filters: [] }],
        }),
      /backends\[0\]\.cluster: unknown cluster 'x'/,
    );
    rejects((c) => c.clusters.push(c.clusters[0]!), /clusters\[1\]\.name: duplicate name/);
  });

  it('requires tls on an HTTPS listener', () => {
    rejects((c) => Object.assign(c.listeners[0]!, { protocol: 'HTTPS' }), /listeners\[0\]\.tls: required/);
    const l = listener(443, { certificates: [{ hostnames: ['*'], secrets: ['default/none'] }] });
    rejects(
      (c) => c.listeners.push(l),
      /listeners\[1\]\.tls\.certificates\[0\]\.secrets\[0\]: unknown secret/,
    );
  });

  it('refuses header values a proxy could not send', () => {
    rejects(
      (c) =>
        c.virtualHosts[0]!.routes[0]!.filters.push({
          type: 'RequestHeaderModifier',
          headers: { set: [{ name: 'x-a', value: 'one\r\ntwo' }], add: [], remove: [] },
        }),
      /filters\[0\]\.headers\.set\[0\]\.value: must not contain CR, LF/,
    );
    rejects(
      (c) =>
        c.virtualHosts[0]!.routes[0]!.filters.push({
          type: 'ResponseHeaderModifier',
          headers: { set: [], add: [{ name: 'bad name', value: 'x' }], remove: [] },
        }),
      /filters\[0\]\.headers\.add\[0\]\.name: must be a header name/,
    );
  });

  it('refuses hostnames and paths that cannot be sent', () => {
    rejects(
      (c) => Object.assign(c.virtualHosts[0]!, { hostname: 'a b.test' }),
      /virtualHosts\[0\]\.hostname: must be a DNS hostname/,
    );
    rejects(
      (c) =>
        c.virtualHosts[0]!.routes[0]!.filters.push({
          type: 'URLRewrite',
          path: { type: 'ReplaceFullPath', value: 'no-slash' },
        }),
      /filters\[0\]\.path\.value: must start with '\/'/,
    );
  });

  it('refuses a value that is not an object at all', () => {
    assert.throws(() => validateFleetConfig('nope'), /fleet config must be an object/);
  });
});

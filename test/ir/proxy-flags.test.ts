// The settings flags' one table, both ways: what the host supervisor and the Kubernetes renderer write, `portico
// proxy` reads back as the settings they came from, with the percentages as the runtime's shares exactly as a
// PUT /settings of the same settings would give them (one conversion).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { proxyRuntimeOptions } from '../../src/cli/proxy.js';
import { fleetProxyFlags, PROXY_SETTING_FLAGS, proxySettingsFlags } from '../../src/ir/proxy-flags.js';
import type { ProxySettings } from '../../src/ir/proxy-settings.js';
import { runtimeSettings } from '../../src/proxy/live-settings.js';

const SETTINGS: ProxySettings[] = [
  {
    logLevel: 'info',
    accessLog: { format: 'json' },
    drainSeconds: 5,
    maxDrainSeconds: 60,
    workers: 1,
  },
  {
    logLevel: 'debug',
    accessLog: {
      format: 'text',
      fields: ['method', 'status', 'path'],
      sampling: 2.5,
      redactQueryParameters: ['token', 'api_key'],
    },
    tracing: { endpoint: 'http://127.0.0.1:4318/v1/traces', sampling: 25 },
    drainSeconds: 0.5,
    maxDrainSeconds: 30,
    workers: 3,
  },
  {
    logLevel: 'warn',
    accessLog: { format: 'off', sampling: 5 },
    tracing: { endpoint: 'http://127.0.0.1:4318/v1/traces' },
    drainSeconds: 1,
    maxDrainSeconds: 2,
    workers: 2,
  },
];

test('portico proxy reads the settings flags a supervisor writes as the settings they came from', () => {
  for (const settings of SETTINGS) {
    const options = proxyRuntimeOptions([...proxySettingsFlags(settings), '--config-file', 'fleet.json']);
    const expected = runtimeSettings(settings);
    assert.deepEqual(
      {
        accessLog: options.accessLog,
        tracing: options.tracing,
        drainMs: options.drainMs,
        maxDrainMs: options.maxDrainMs,
        workers: options.workers,
      },
      {
        accessLog: expected.accessLog,
        tracing: expected.tracing,
        drainMs: expected.drainMs,
        maxDrainMs: expected.maxDrainMs,
        workers: expected.workers,
      },
    );
  }
});

test("a fleet's flags leave out what the proxy's defaults say, and a flag left out reads as its default", () => {
  assert.deepEqual(fleetProxyFlags({ logLevel: 'info' }), []);
  assert.deepEqual(fleetProxyFlags({ logLevel: 'debug', accessLog: { format: 'off', sampling: 5 } }), [
    '--log-level',
    'debug',
    '--access-log',
    'off',
  ]);
  const unset = proxyRuntimeOptions(['--config-file', 'fleet.json', '--workers', '1']);
  const defaults = runtimeSettings({
    logLevel: PROXY_SETTING_FLAGS['log-level'].default,
    accessLog: { format: PROXY_SETTING_FLAGS['access-log'].default },
    drainSeconds: Number(PROXY_SETTING_FLAGS['drain-seconds'].default),
    maxDrainSeconds: Number(PROXY_SETTING_FLAGS['max-drain-seconds'].default),
    workers: 1,
  });
  assert.deepEqual(unset.accessLog, defaults.accessLog);
  assert.equal(unset.accessLog?.sampling, Number(PROXY_SETTING_FLAGS['access-log-sampling'].default) / 100);
  assert.equal(unset.drainMs, defaults.drainMs);
  assert.equal(unset.maxDrainMs, defaults.maxDrainMs);
  assert.equal(unset.tracing, undefined);
});

// The settings flags' one table, both ways: what the host supervisor and the Kubernetes renderer write, `portico
// proxy` reads back as the settings they came from, with the percentages as the runtime's shares exactly as a
// PUT /settings of the same settings would give them (one conversion).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { proxyRuntimeOptions } from '../../src/cli/proxy.js';
import {
  fleetProxyFlags,
  PROXY_SETTING_FLAGS,
  proxySettingsFlags,
  type SettingFlagName,
} from '../../src/ir/proxy-flags.js';
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

/** Each flag's setting in the settings: a new row fails to compile here until it says which it carries. */
const SETTING_OF: { [N in SettingFlagName]: (s: ProxySettings) => unknown } = {
  'log-level': (s) => s.logLevel,
  'access-log': (s) => s.accessLog.format,
  'access-log-fields': (s) => s.accessLog.fields,
  'access-log-sampling': (s) => s.accessLog.sampling,
  'access-log-redact-query': (s) => s.accessLog.redactQueryParameters,
  'tracing-endpoint': (s) => s.tracing?.endpoint,
  'tracing-sampling': (s) => s.tracing?.sampling,
  'drain-seconds': (s) => s.drainSeconds,
  'max-drain-seconds': (s) => s.maxDrainSeconds,
  workers: (s) => s.workers,
};

test('every row of the table parses what it writes back to the setting it was written from', () => {
  let checked = 0;
  for (const settings of SETTINGS) {
    for (const name of Object.keys(PROXY_SETTING_FLAGS) as SettingFlagName[]) {
      const row = PROXY_SETTING_FLAGS[name];
      const text = row.write(settings);
      if (text === undefined) continue;
      assert.deepEqual(row.parse(text, `--${name}`), SETTING_OF[name](settings), `--${name} ${text}`);
      checked++;
    }
  }
  // Every row wrote at least once across the settings above (the second one sets them all).
  assert.ok(checked >= Object.keys(PROXY_SETTING_FLAGS).length);
});

test("every row's default parses, so a flag left out never fails", () => {
  for (const [name, row] of Object.entries(PROXY_SETTING_FLAGS)) {
    if (row.default !== undefined) assert.doesNotThrow(() => row.parse(row.default, `--${name}`), name);
  }
});

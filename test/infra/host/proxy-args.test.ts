import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostProxyArgs, hostProxySettings } from '../../../src/infra/host/proxy-args.js';
import { proxySettingsFlags } from '../../../src/ir/proxy-flags.js';

test("a host proxy binds its listeners and its own ports on the fleet's address, over mutual TLS", () => {
  const args = hostProxyArgs({
    fleet: 'default/eg',
    node: 'proxy-default-eg-e41e7b31-0',
    address: '127.0.1.7',
    discoveryAddress: '127.0.0.1:18000',
    caFile: '/state/ca.crt',
    certFile: '/state/proxy.crt',
    keyFile: '/state/proxy.key',
    serverName: 'portico-gateway',
    maxWorkers: 4,
  });
  const value = (flag: string) => args[args.indexOf(flag) + 1];
  assert.equal(args[0], 'proxy');
  assert.equal(value('--fleet'), 'default/eg');
  assert.equal(value('--bind-address'), '127.0.1.7');
  assert.equal(value('--admin-address'), '127.0.1.7:19000');
  assert.equal(value('--metrics-address'), '127.0.1.7:19001');
  assert.equal(value('--ready-address'), '127.0.1.7:19003');
  assert.equal(value('--cert-file'), '/state/proxy.crt');
  assert.equal(value('--server-name'), 'portico-gateway');
  // A settings change through its admin API cannot ask for more workers than the supervisor allows.
  assert.equal(value('--max-workers'), '4');
  assert.ok(!args.includes('--token-file'));
  // What may change while it runs is the supervisor's to add (settings): a change there restarts nothing.
  for (const flag of ['--drain-seconds', '--max-drain-seconds', '--workers', '--access-log', '--log-level'])
    assert.ok(!args.includes(flag), flag);
});

test("a fleet's settings are spelled out whole, defaults filled in, and become every flag", () => {
  const defaults = hostProxySettings({ workers: 2 });
  assert.deepEqual(defaults, {
    logLevel: 'info',
    accessLog: { format: 'json' },
    drainSeconds: 5,
    maxDrainSeconds: 60,
    workers: 2,
  });
  assert.deepEqual(proxySettingsFlags(defaults), [
    '--log-level',
    'info',
    '--access-log',
    'json',
    '--drain-seconds',
    '5',
    '--max-drain-seconds',
    '60',
    '--workers',
    '2',
  ]);
  const set = hostProxySettings({
    drainSeconds: 1,
    maxDrainSeconds: 30,
    workers: 3,
    fleet: {
      logLevel: 'debug',
      accessLog: { format: 'text', fields: ['method', 'status'], sampling: 5 },
      tracing: { endpoint: 'http://127.0.0.1:4318/v1/traces', sampling: 25 },
    },
  });
  assert.deepEqual(proxySettingsFlags(set), [
    '--log-level',
    'debug',
    '--access-log',
    'text',
    '--access-log-fields',
    'method,status',
    '--access-log-sampling',
    '5',
    '--tracing-endpoint',
    'http://127.0.0.1:4318/v1/traces',
    '--tracing-sampling',
    '25',
    '--drain-seconds',
    '1',
    '--max-drain-seconds',
    '30',
    '--workers',
    '3',
  ]);
  assert.deepEqual(
    proxySettingsFlags({ ...defaults, accessLog: { format: 'off', sampling: 5 } }).slice(2, 4),
    ['--access-log', 'off'],
  );
});

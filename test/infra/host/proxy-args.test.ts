import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostProxyArgs } from '../../../src/infra/host/proxy-args.js';

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
    drainSeconds: 2,
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
  assert.equal(value('--drain-seconds'), '2');
  assert.ok(!args.includes('--max-drain-seconds'));
  assert.ok(!args.includes('--token-file'));
});

test("a fleet's access log settings become the proxy's flags; none means the proxy's default", () => {
  const base = {
    fleet: 'default/eg',
    node: 'n',
    address: '127.0.1.7',
    discoveryAddress: '127.0.0.1:18000',
    caFile: 'ca',
    certFile: 'crt',
    keyFile: 'key',
  };
  const tail = (args: string[]) => args.slice(args.indexOf('--access-log'));
  assert.ok(!hostProxyArgs(base).includes('--access-log'));
  assert.deepEqual(tail(hostProxyArgs({ ...base, settings: { accessLog: { format: 'off' } } })), [
    '--access-log',
    'off',
  ]);
  assert.deepEqual(
    tail(
      hostProxyArgs({
        ...base,
        settings: { accessLog: { format: 'text', fields: ['method', 'status'], sampling: 5 } },
      }),
    ),
    ['--access-log', 'text', '--access-log-fields', 'method,status', '--access-log-sampling', '5'],
  );
  const traced = hostProxyArgs({
    ...base,
    settings: { logLevel: 'debug', tracing: { endpoint: 'http://127.0.0.1:4318/v1/traces', sampling: 25 } },
  });
  assert.deepEqual(traced.slice(traced.indexOf('--log-level')), [
    '--log-level',
    'debug',
    '--tracing-endpoint',
    'http://127.0.0.1:4318/v1/traces',
    '--tracing-sampling',
    '25',
  ]);
  assert.ok(
    !hostProxyArgs({ ...base, settings: { logLevel: 'info' } }).includes('--log-level'),
    'info is the default',
  );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withoutReservedPorts } from '../../../src/infra/host/reserved-ports.js';
import { fleet, listener, vhost } from '../../support/fleet.js';

test('listeners on the proxy’s own ports are left out and explained; others stay', () => {
  const a = vhost(8080, '*', []);
  const b = vhost(19000, '*', []);
  const config = fleet([
    { listener: listener(8080), vhosts: [a] },
    { listener: listener(19000), vhosts: [b] },
  ]);
  const { fleet: served, errors } = withoutReservedPorts(config);
  assert.deepEqual(
    served.listeners.map((l) => l.port),
    [8080],
  );
  assert.deepEqual(
    errors.map((e) => [e.gateway, e.listener]),
    [['default/eg', 'l19000']],
  );
  assert.match(errors[0]!.message, /^port 19000 is reserved for the proxy's admin endpoint/);
});

test('a fleet without reserved ports is passed through as the same object', () => {
  const a = vhost(8080, '*', []);
  const config = fleet([{ listener: listener(8080), vhosts: [a] }]);
  const result = withoutReservedPorts(config);
  assert.equal(result.fleet, config);
  assert.deepEqual(result.errors, []);
});

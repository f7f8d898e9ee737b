// What a person running standalone is told about Gateways: a fleet on its way is no news, an address that
// cannot be had (an unmet spec.addresses entry) is, though both say AddressNotAssigned.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../src/platform/log-line.js';
import { createGatewayAnnouncements } from '../../../src/provider/standalone/gateway-announcements.js';
import type { ObjectStatus } from '../../../src/translate/index.js';

function capture(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const add = (line: string) => void lines.push(line);
  return { log: { debug: add, info: add, warn: add, error: add }, lines };
}

function gateway(name: string, message: string): ObjectStatus {
  const programmed = { type: 'Programmed', status: 'False', reason: 'AddressNotAssigned', message };
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    namespace: 'default',
    name,
    generation: 1,
    status: { conditions: [programmed], listeners: [] },
  };
}

test('a Gateway waiting for its fleet is not announced; one whose address entry cannot be met is', () => {
  const { log, lines } = capture();
  const announcements = createGatewayAnnouncements(log);
  announcements.announce([
    gateway('waiting', 'No address assigned to fleet default/waiting yet'),
    gateway(
      'internal',
      'spec.addresses[0]: no address of the fleet is an address (Cluster): it has 127.0.10.3',
    ),
  ]);
  assert.deepEqual(lines, [
    'Gateway default/internal not programmed: AddressNotAssigned: spec.addresses[0]: no address of the fleet is an address (Cluster): it has 127.0.10.3',
  ]);
});

// What route matching sees after a listener's filters: their header edits applied, Host and :authority as they came;
// a filter that cannot be honoured refuses every request.
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { test } from 'node:test';
import type { VirtualHost } from '../../../src/ir/fleet-config.js';
import { listenerFilterPolicies } from '../../../src/proxy/access/listener-filter-policies.js';
import { accessRequest } from '../../../src/proxy/access/request-view.js';
import { ClientRequest, clientFacts } from '../../../src/proxy/exchange.js';
import { filteredRequest } from '../../../src/proxy/routing/listener-filters.js';

const request = (lines: string[]) =>
  new ClientRequest('GET', '/a', lines, clientFacts(new Socket()), null, false);

test('a filter sets, appends and removes headers, never Host or :authority', () => {
  const req = request(['Host', 'a.example.com', 'X-Tier', 'claimed', 'X-Drop', '1', 'Accept', '*/*']);
  const out = filteredRequest(req, {
    set: [
      { name: 'x-tier', value: 'gold' },
      { name: 'host', value: 'evil.example.com' },
      { name: ':authority', value: 'evil.example.com' },
    ],
    add: [
      { name: 'Host', value: 'second.example.com' },
      { name: 'x-user', value: 'alice' },
    ],
    remove: ['x-drop', 'HOST'],
  });
  assert.deepEqual(out.rawHeaders, [
    'Host',
    'a.example.com',
    'Accept',
    '*/*',
    'x-tier',
    'gold',
    'x-user',
    'alice',
  ]);
  assert.equal(out.host, 'a.example.com');
  assert.equal(out.headers['x-tier'], 'gold');
  assert.deepEqual(req.rawHeaders.length, 8, 'the request as it came is not changed');
});

test('a refused filter refuses every request; none: no policies', async () => {
  const auth = {
    protocol: 'HTTP' as const,
    cluster: 'default/gone:80',
    allowedRequestHeaders: [],
    pathPrefix: '',
    allowedResponseHeaders: [],
    forwardBodyMaxBytes: 0,
    timeoutMs: 1000,
    failOpen: false,
  };
  const vhost: VirtualHost = {
    name: 'port-80/*',
    listener: 'port-80',
    hostname: '*',
    routes: [],
    requestFilters: [{ type: 'ExternalAuth', auth, refused: 'Service default/gone not found' }],
  };
  const [policy] = listenerFilterPolicies(vhost)!;
  assert.equal(policy!.name, 'ListenerFilter port-80/*[0]');
  const outcome = await policy!.steps[0]!.check(accessRequest(request(['Host', 'a']), '/a', '', false), {});
  assert.equal(outcome.allow, false);
  assert.equal(listenerFilterPolicies({ ...vhost, requestFilters: [] }), undefined);
});

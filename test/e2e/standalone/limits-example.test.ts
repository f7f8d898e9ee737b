// examples/limits as written, through `portico standalone` and its real proxy (two workers): the ClientTrafficPolicy
// makes the client behind the trusted loopback peer the one rate limited by the RateLimitPolicy, across both
// workers; another client has its own budget; a body over the rule's ClientTrafficPolicy limit gets 413; an
// allowed response carries the RateLimit fields too; the policies say Accepted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpRequest } from '../../support/http.js';
import { adminResources, exampleCopy, programmedAddress, startStandalone, untilStatus } from './harness.js';

test('examples/limits: ClientTrafficPolicy and RateLimitPolicy from files, through a two-worker proxy', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'limits', ['backend']);
  const c = await startStandalone(t, {
    args: ['-f', files],
    pool: '127.0.53.0/24',
    stateDir,
    proxyWorkersMax: 2,
  });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);

  const from = (client: string, body?: string) =>
    httpRequest(8080, '/api/orders', {
      address,
      host: 'www.example.com',
      headers: { 'x-forwarded-for': client },
      timeoutMs: 5000,
      ...(body === undefined ? {} : { method: 'POST', body }),
    });
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push(await from('203.0.113.5'));
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200, 200, 429],
  );
  assert.equal(answers[0]!.headers['ratelimit-policy'], '"default/api-limit/per-client";q=5;w=60');
  assert.match(String(answers[0]!.headers.ratelimit), /^"default\/api-limit\/per-client";r=4;t=\d+$/);
  assert.match(String(answers[5]!.headers['retry-after']), /^\d+$/);
  const other = await from('203.0.113.6');
  assert.equal(other.status, 200);
  assert.deepEqual(JSON.parse(other.body).headers['X-Forwarded-For'], [`203.0.113.6, 127.0.0.1`]);
  assert.equal((await from('203.0.113.7', 'x'.repeat(2000))).status, 413);

  const policies = (await adminResources(c.admin)).filter((r) => r.kind.endsWith('Policy'));
  assert.deepEqual(
    policies.map((p) => {
      const ancestors = (p.status as { ancestors: { conditions: { type: string; status: string }[] }[] })
        .ancestors;
      return `${p.kind} ${p.metadata.name} ${ancestors[0]?.conditions.map((x) => `${x.type}=${x.status}`)}`;
    }),
    [
      'ClientTrafficPolicy api-body Accepted=True',
      'ClientTrafficPolicy edge Accepted=True',
      'RateLimitPolicy api-limit Accepted=True',
    ],
  );
});

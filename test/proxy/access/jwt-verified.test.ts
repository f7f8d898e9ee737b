// The JWT step keeps the tokens it verified, so a client's repeated token is not checked again at once: what it
// keeps must never let through what a fresh check would refuse (an expired token, another token, missing claims).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { JwtConfig } from '../../../src/ir/fleet-config.js';
import { jwtStep } from '../../../src/proxy/access/jwt.js';
import type { AccessRequest } from '../../../src/proxy/access/request-view.js';
import type { StepOutcome } from '../../../src/proxy/access/step.js';
import { accessRequest } from '../../support/access-request.js';

const ISSUER = 'https://issuer.test';

function bearer(token: string): AccessRequest {
  return accessRequest({ headers: { authorization: `Bearer ${token}` } });
}

async function fixture() {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const config: JwtConfig = {
    sources: [{ type: 'Header', name: 'authorization', prefix: 'Bearer ' }],
    maxTokenBytes: 8192,
    providers: [
      {
        name: 'test',
        issuer: ISSUER,
        audiences: ['api'],
        keys: JSON.stringify({ keys: [jwk] }),
        claimHeaders: [{ claim: 'sub', header: 'x-user' }],
        requiredClaims: [{ name: 'role', values: ['reader'] }],
      },
    ],
  };
  const sign = (claims: Record<string, unknown>, expSeconds: number) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience('api')
      .setExpirationTime(expSeconds)
      .sign(privateKey);
  return { config, sign };
}

function verdict(o: StepOutcome): string {
  return o.allow ? `allow ${o.set?.map((h) => `${h.name}=${h.value}`).join(',')}` : `${o.status} ${o.reason}`;
}

test('a verified token passes again from what the step kept, and is refused once it expires', async () => {
  const { config, sign } = await fixture();
  let clock = Date.now();
  const step = jwtStep(config, { now: () => clock });
  const expSeconds = Math.floor(clock / 1000) + 60;
  const token = await sign({ sub: 'ada', role: 'reader' }, expSeconds);
  const check = async (t: string) => verdict(await step.check(bearer(t), {}));
  assert.equal(await check(token), 'allow x-user=ada');
  assert.equal(await check(token), 'allow x-user=ada', 'the same token again');
  // Past its expiry and the 30 s of clock tolerance: refused, although it was verified before.
  clock = (expSeconds + 31) * 1000;
  assert.match(await check(token), /^401 token refused \(ERR_JWT_EXPIRED/);
});

test('what the step kept holds for that exact token only, and the required claims are checked every time', async () => {
  const { config, sign } = await fixture();
  const step = jwtStep(config);
  const exp = Math.floor(Date.now() / 1000) + 600;
  const good = await sign({ sub: 'ada', role: 'reader' }, exp);
  const check = async (t: string) => verdict(await step.check(bearer(t), {}));
  assert.equal(await check(good), 'allow x-user=ada');
  // The same payload with a signature changed in its last character: a fresh check, refused.
  const forged = good.slice(0, -2) + (good.at(-2) === 'A' ? 'B' : 'A') + good.at(-1);
  assert.match(await check(forged), /^401 token refused/);
  const writer = await sign({ sub: 'bob', role: 'writer' }, exp);
  assert.equal(await check(writer), '403 claim role has none of the required values');
  assert.equal(await check(writer), '403 claim role has none of the required values', 'and again');
});

test('a token with a claim that cannot be a header is refused every time, not only the first', async () => {
  const { config, sign } = await fixture();
  const step = jwtStep(config);
  const token = await sign({ sub: 'ada\r\nx-admin: 1', role: 'reader' }, Math.floor(Date.now() / 1000) + 600);
  for (let i = 0; i < 2; i++)
    assert.equal(verdict(await step.check(bearer(token), {})), '401 claim sub holds CR, LF or NUL');
});

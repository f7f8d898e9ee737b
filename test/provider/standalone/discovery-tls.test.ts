// Standalone fleet certificates: issued into the state directory, pinned for discovery, renewed two thirds into
// their life with the replaced one's grace, and deleted (so refused) when their fleet goes.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { standaloneDiscoveryTls } from '../../../src/provider/standalone/discovery-tls.js';

const DAY = 86_400_000;

function stateDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'portico-standalone-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const fingerprintOf = (file: string) => new X509Certificate(readFileSync(file, 'utf8')).fingerprint256;

test("a fleet's certificate is issued once, pinned, and pinned again by the next run from its files", async (t) => {
  const dir = stateDir(t);
  const first = await standaloneDiscoveryTls(dir, 'ns');
  t.after(() => first.close());
  const files = first.fleetFiles('default/eg');
  const fingerprint = fingerprintOf(files.cert);
  await first.certificates.ready();
  assert.equal(
    first.certificates.acceptedUntil('default/eg', fingerprint, Date.now()),
    Number.POSITIVE_INFINITY,
  );
  assert.deepEqual(first.fleetFiles('default/eg'), files);
  assert.equal(fingerprintOf(files.cert), fingerprint, 'not issued again');
  const life = Date.parse(new X509Certificate(readFileSync(files.cert, 'utf8')).validTo) - Date.now();
  assert.ok(Math.abs(life - 7 * DAY) < 2_000, `${life / DAY} days`);
  first.close();

  // The next controller accepts the proxies the first left running before its first translation.
  const next = await standaloneDiscoveryTls(dir, 'ns');
  t.after(() => next.close());
  await next.certificates.ready();
  assert.equal(
    next.certificates.acceptedUntil('default/eg', fingerprint, Date.now()),
    Number.POSITIVE_INFINITY,
  );
  assert.equal(next.certificates.acceptedUntil('default/other', fingerprint, Date.now()), undefined);
});

test('past two thirds of its life the certificate is renewed; the one it replaced is accepted for the grace only', async (t) => {
  const dir = stateDir(t);
  const t0 = Date.now();
  const first = await standaloneDiscoveryTls(dir, 'ns', { now: () => t0 });
  const files = first.fleetFiles('default/eg');
  const old = fingerprintOf(files.cert);
  first.close();

  let clock = t0 + 5 * DAY;
  const later = await standaloneDiscoveryTls(dir, 'ns', {
    now: () => clock,
    lifetime: { lifetimeMs: 7 * DAY, graceMs: 60_000 },
  });
  t.after(() => later.close());
  const renewed = fingerprintOf(files.cert);
  assert.notEqual(renewed, old, 'renewed on start: the files hold a new certificate');
  const pins = later.certificates;
  assert.equal(pins.acceptedUntil('default/eg', renewed, clock), Number.POSITIVE_INFINITY);
  assert.equal(pins.acceptedUntil('default/eg', old, clock), clock + 60_000, 'the old one, for the grace');
  assert.equal(pins.acceptedUntil('default/eg', old, clock + 60_000), undefined, 'and not after it');
  clock += 1;
  assert.deepEqual(later.fleetFiles('default/eg'), files);
  assert.equal(fingerprintOf(files.cert), renewed, 'current now: not issued again');
});

test('a fleet that goes loses its certificate files, and its certificate is refused', async (t) => {
  const dir = stateDir(t);
  const tls = await standaloneDiscoveryTls(dir, 'ns');
  t.after(() => tls.close());
  const gone = tls.fleetFiles('default/gone');
  const kept = tls.fleetFiles('default/kept');
  const fingerprint = fingerprintOf(gone.cert);
  tls.retain(['default/kept']);
  assert.equal(existsSync(gone.cert) || existsSync(gone.key), false);
  assert.equal(existsSync(kept.cert), true);
  assert.equal(tls.certificates.acceptedUntil('default/gone', fingerprint, Date.now()), undefined);
  // Back again: a new identity, not the old one.
  const back = tls.fleetFiles('default/gone');
  assert.notEqual(fingerprintOf(back.cert), fingerprint);
});

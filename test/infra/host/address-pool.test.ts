import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openAddressClaims } from '../../../src/infra/host/address-claims.js';
import { openAddressPool, parseCidr, usableAddresses } from '../../../src/infra/host/address-pool.js';
import { isPorticoError } from '../../../src/platform/errors.js';

async function tempDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portico-pool-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('the default pool hands out 127.0.1.1 first and skips the network and broadcast addresses', () => {
  const usable = usableAddresses(parseCidr('127.0.1.0/24'));
  assert.equal(usable.length, 254);
  assert.equal(usable[0], '127.0.1.1');
  assert.equal(usable.at(-1), '127.0.1.254');
  assert.deepEqual(usableAddresses(parseCidr('127.0.0.1/32')), ['127.0.0.1']);
  assert.deepEqual(usableAddresses(parseCidr('127.0.2.4/31')), ['127.0.2.4', '127.0.2.5']);
});

test('a bad CIDR is an error naming the option', () => {
  for (const bad of ['127.0.1.0', '127.0.1.0/33', '300.0.0.0/8', 'fd00::/64', '127.0.1.5/24']) {
    assert.throws(
      () => parseCidr(bad, '--address-pool'),
      (e: unknown) => isPorticoError(e) && e.code === 'E_CONFIG' && e.message.startsWith('--address-pool: '),
      bad,
    );
  }
  assert.match(
    (() => {
      try {
        parseCidr('127.0.1.5/24', '--address-pool');
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    })(),
    /block starts at 127\.0\.1\.0\/24/,
  );
});

test('each fleet gets its own address, stable across a restart', async (t) => {
  const stateDir = await tempDir(t);
  const first = await openAddressPool({ stateDir });
  const assigned = first.assign(['default/eg', 'team-a/web', 'merged-eg']);
  assert.equal(new Set(assigned.values()).size, 3);
  await first.save();

  const second = await openAddressPool({ stateDir });
  // A different order and an extra fleet must not move anyone.
  const again = second.assign(['merged-eg', 'new/one', 'default/eg', 'team-a/web']);
  for (const [fleet, address] of assigned) assert.equal(again.get(fleet), address, fleet);
  assert.ok(![...assigned.values()].includes(again.get('new/one') ?? ''));
  const file = JSON.parse(await readFile(join(stateDir, 'addresses.json'), 'utf8'));
  assert.equal(file.fleets['default/eg'].address, assigned.get('default/eg'));
});

test('a released address goes to new fleets only once the fresh ones are used up, and comes back to its fleet', async () => {
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const tick = (): Date => {
    clock += 1000;
    return new Date(clock);
  };
  const pool = await openAddressPool({ cidr: '127.0.3.0/30', now: tick });
  // A /30 has two usable addresses.
  const a = pool.acquire('a');
  pool.acquire('b');
  assert.throws(() => pool.acquire('c'), /127\.0\.3\.0\/30 is exhausted/);
  pool.release('a');
  assert.equal(pool.get('a'), undefined);
  assert.equal(pool.acquire('a'), a, 'a re-added fleet gets its previous address back');
  pool.release('a');
  assert.equal(pool.acquire('c'), a, 'with nothing fresh left, the released address is reused');
  assert.equal(pool.get('c'), a);
  assert.throws(() => pool.acquire('a'), /exhausted/, 'b and c hold both addresses now');
});

test('fresh addresses are preferred over released ones', async () => {
  const pool = await openAddressPool({ cidr: '127.0.4.0/29' });
  const a = pool.acquire('a');
  pool.release('a');
  const b = pool.acquire('b');
  assert.notEqual(b, a);
});

test('assign releases the fleets no longer wanted', async () => {
  const pool = await openAddressPool({ cidr: '127.0.5.0/24' });
  pool.assign(['x', 'y']);
  const after = pool.assign(['y']);
  assert.deepEqual([...after.keys()], ['y']);
  assert.equal(pool.get('x'), undefined);
});

test('assignments outside a changed pool are dropped; an unreadable file is a warning, not a crash', async (t) => {
  const stateDir = await tempDir(t);
  const first = await openAddressPool({ stateDir });
  first.acquire('default/eg');
  await first.save();
  const moved = await openAddressPool({ stateDir, cidr: '127.0.9.0/24' });
  assert.equal(moved.acquire('default/eg'), '127.0.9.1');

  await writeFile(join(stateDir, 'addresses.json'), '{not json');
  const warnings: string[] = [];
  const fresh = await openAddressPool({ stateDir, onWarning: (m) => warnings.push(m) });
  assert.equal(fresh.acquire('default/eg'), '127.0.1.1');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /addresses\.json: ignoring unreadable address assignments/);
  await fresh.save();
  const saved = JSON.parse(await readFile(join(stateDir, 'addresses.json'), 'utf8'));
  assert.equal(saved.fleets['default/eg'].address, '127.0.1.1');
});

test('pools of two state dirs sharing the host-wide claims never hand out the same address', async (t) => {
  const claimsDir = await tempDir(t);
  const running = new Set<string>(); // state dirs that still run something
  const inUse = (stateDir: string) => running.has(stateDir);
  const a = await openAddressPool({
    stateDir: await tempDir(t),
    claims: openAddressClaims(claimsDir, '/state/a', inUse),
  });
  running.add('/state/a');
  const warningsOfB: string[] = [];
  const b = await openAddressPool({
    stateDir: await tempDir(t),
    claims: openAddressClaims(claimsDir, '/state/b', inUse),
    onWarning: (m) => warningsOfB.push(m),
  });
  const fromA = a.assign(['default/eg', 'team-a/web']);
  const fromB = b.assign(['default/eg']);
  assert.deepEqual([...fromA.values()], ['127.0.1.1', '127.0.1.2']);
  assert.equal(fromB.get('default/eg'), '127.0.1.3');
  // Not where the examples say: who holds that address, and how to stop them.
  assert.deepEqual(warningsOfB, [
    'fleet default/eg is at 127.0.1.3: 127.0.1.1 is held by fleet default/eg of the standalone controller with ' +
      '--state-dir /state/a, whose proxies keep serving there (stop them: portico standalone --stop --state-dir /state/a)',
  ]);
  b.assign(['default/eg', 'other/gw']);
  assert.equal(warningsOfB.length, 2, 'each new fleet that cannot have it is told once');
  assert.equal(JSON.parse(await readFile(join(claimsDir, '127.0.1.1'), 'utf8')).stateDir, '/state/a');

  // A released address is free for others; a claim whose owner runs nothing any more is taken over.
  a.assign(['default/eg']);
  const c = await openAddressPool({
    stateDir: await tempDir(t),
    claims: openAddressClaims(claimsDir, '/state/c', inUse),
  });
  assert.equal(c.assign(['x/y']).get('x/y'), '127.0.1.2');
  running.delete('/state/a');
  assert.equal(c.assign(['x/y', 'x/z']).get('x/z'), '127.0.1.1');
});

test('an avoided address is never handed out again; its fleet moves', async (t) => {
  const pool = await openAddressPool({ stateDir: await tempDir(t) });
  assert.equal(pool.assign(['default/eg']).get('default/eg'), '127.0.1.1');
  assert.equal(pool.avoid('127.0.1.1'), 'default/eg');
  assert.equal(pool.assign(['default/eg']).get('default/eg'), '127.0.1.2');
  assert.equal(pool.assign(['default/eg', 'new/one']).get('new/one'), '127.0.1.3');
});

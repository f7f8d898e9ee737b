// A cluster on a machine that never ran one must leave it as it found it. A machine that did keeps traces a
// first run makes (the /run/netns mount of the first `ip netns add`), so the comparison in cluster.test.ts
// passes there whether or not they are undone: here the cluster runs where /run starts empty.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { NETNS_DIR } from './host-baseline.js';
import type { HostState } from './host-state.js';

const skip = process.getuid?.() === 0 ? false : 'the cluster needs root';

test('the first cluster on a fresh /run removes the /run/netns mount and every file it made there', {
  skip,
}, () => {
  // -n: no libmount table under the host's /run, which the new tmpfs is about to hide.
  const script = 'mount -n -t tmpfs portico-first-run /run && exec "$0" "$@"';
  const probe = spawnSync(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      script,
      process.execPath,
      '--import',
      'tsx',
      'test/cluster/first-run-probe.ts',
    ],
    { encoding: 'utf8', timeout: 240_000 },
  );
  assert.equal(probe.status, 0, `probe failed: ${probe.stderr}`);
  const { before, difference } = JSON.parse(probe.stdout) as { before: HostState; difference: string[] };
  // The simulation holds: nothing of an earlier run was there.
  assert.ok(!before.mounts?.includes(NETNS_DIR), 'the fresh /run has no netns mount');
  assert.deepEqual(before.run, [], 'the fresh /run is empty');
  assert.deepEqual(difference, []);
});

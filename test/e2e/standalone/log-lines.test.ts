// The controller's log quotes file names and values from resources; a line break in one must not forge a line.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { splitLogLevel } from '../../../src/platform/log-line.js';
import { waitForOutput } from '../../support/child.js';
import { PORTICO_CLASS_YAML, startStandalone, tempDir } from './harness.js';

const FORGED = 'error: forged';

const GATEWAY = `${PORTICO_CLASS_YAML}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eg, namespace: default}
spec:
  gatewayClassName: portico
  listeners:
  - name: https
    protocol: HTTPS
    port: 8443
    tls: {certificateRefs: [{name: "missing\\n${FORGED} by a Secret name"}]}
`;

test('values and file names with line breaks are escaped in the log, one line each', async (t) => {
  const dir = await tempDir(t, 'log-lines');
  await writeFile(join(dir, 'gateway.yaml'), GATEWAY);
  await writeFile(
    join(dir, `bad\n${FORGED} by a file name.yaml`),
    'kind: Service\napiVersion: v1\nmetadata: {}\n',
  );
  const c = await startStandalone(t, {
    args: ['-f', dir],
    pool: '127.0.97.0/24',
    stateDir: join(dir, '.state'),
  });
  await waitForOutput(c.child, /listener https: ResolvedRefs=False/);
  await waitForOutput(c.child, /by a file name\.yaml/);
  const lines = c.child.stdout().split('\n');
  assert.deepEqual(
    lines.filter((l) => l.startsWith(FORGED)),
    [],
    c.child.stdout(),
  );
  assert.ok(
    lines.some((l) => l.includes(`missing\\n${FORGED} by a Secret name`)),
    c.child.stdout(),
  );
  assert.ok(
    lines.some(
      (l) => splitLogLevel(l).level === 'error' && l.includes(`bad\\n${FORGED} by a file name.yaml`),
    ),
    c.child.stdout(),
  );
});

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadFleetConfigFile } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';

describe('loadFleetConfigFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-fleet-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const config = simpleFleet(
    [vhost(80, '*', [route(forward(['default/a:80']))])],
    [upstream('default/a:80', [8080])],
  );

  it('reads JSON (and YAML) fleet configs', async () => {
    const file = join(dir, 'fleet.json');
    writeFileSync(file, JSON.stringify(config));
    assert.deepEqual(await loadFleetConfigFile(file), config);
  });

  it('names the file and the field of an invalid config', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      JSON.stringify({ ...config, listeners: [{ ...config.listeners[0], port: 'eighty' }] }),
    );
    await assert.rejects(loadFleetConfigFile(file), (error: Error) => {
      assert.match(error.message, /bad\.yaml: listeners\[0\]\.port: must be an integer/);
      return true;
    });
  });

  it('names a file that does not exist', async () => {
    await assert.rejects(loadFleetConfigFile(join(dir, 'missing.json')), /missing\.json: ENOENT/);
  });
});

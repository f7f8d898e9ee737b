import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadFleetConfigFile } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, startEcho, until } from '../support/http.js';
import { REPO_ROOT } from '../support/portico.js';

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

  it('runStaticProxy serves the file until SIGTERM, then drains and exits 0', async () => {
    const echo = await startEcho('a');
    try {
      const file = join(dir, 'static.json');
      const served = simpleFleet(
        [vhost(80, '*', [route(forward(['default/a:80']))])],
        [upstream('default/a:80', [echo.port])],
      );
      writeFileSync(file, JSON.stringify(served));
      const entry = join(REPO_ROOT, 'dist/proxy/index.js');
      // The logger `portico proxy` gives it: without one, runStaticProxy says nothing.
      const script = `const { runStaticProxy } = await import(process.argv[2]);
const { createLogger, logToStderr } = await import(process.argv[3]);
const log = createLogger('info', logToStderr);
process.exitCode = await runStaticProxy(process.argv[1], { bindAddress: '127.0.0.1', portMap: () => 0, drainMs: 50, log });`;
      const child = spawn(
        process.execPath,
        ['--input-type=module', '-e', script, file, entry, join(REPO_ROOT, 'dist/platform/log-line.js')],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (c: string) => {
        stderr += c;
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      await until(() => /listening: port-80 on [\d.]+:\d+/.test(stderr));
      const port = Number(/listening: port-80 on [\d.]+:(\d+)/.exec(stderr)![1]);
      assert.equal((await httpRequest(port, '/')).status, 200);
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.match(stderr, /drained/);
    } finally {
      await closeServer(echo.server);
    }
  });

  it('names a file that does not exist', async () => {
    await assert.rejects(loadFleetConfigFile(join(dir, 'missing.json')), /missing\.json: ENOENT/);
  });
});

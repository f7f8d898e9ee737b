import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PORTICO_MAIN, REPO_ROOT } from '../support/portico.js';

test('an unknown subcommand exits 2 and lists the commands', () => {
  const result = spawnSync(process.execPath, [PORTICO_MAIN, 'no-such-command'], { encoding: 'utf8' });
  assert.equal(result.status, 2);
  assert.match(result.stderr, /unknown command 'no-such-command'/);
  assert.match(result.stderr, /usage: portico <command>/);
});

test('every command says what is wrong with its command line in plain words, with its usage, and exits 2', () => {
  for (const [args, message] of [
    [['standalone', '--bogus'], /^portico: standalone: unknown option --bogus\n\nusage: portico standalone/],
    [
      ['standalone', '-f', '.', '--log-level', 'loud'],
      /^portico: --log-level: 'loud' is not debug, info, warn, error/,
    ],
    [['proxy', '--workers'], /^portico: proxy: --workers needs a value\n\nusage: portico proxy/],
    [['get', 'gateways', '--help=x'], /^portico: get: --help takes no value\n\nusage: portico get/],
    [['echo', 'extra'], /^portico: echo: unexpected argument 'extra'\n\nusage: portico echo/],
    [['translate', '--nope'], /^portico translate: unknown option --nope\n\nusage: portico translate/],
    [['version', '--short'], /^portico: version: unknown option --short\n\nusage: portico version/],
    [['version', 'extra'], /^portico: version: unexpected argument 'extra'\n\nusage: portico version/],
    [['cleanup', '--log-level', 'loud'], /^portico: --log-level: 'loud' is not debug, info, warn, error/],
    [['shutdown-manager', '--log-format', 'xml'], /^portico: --log-format: 'xml' is not text or json/],
    [['echo', '--log-level', 'loud'], /^portico: --log-level: 'loud' is not debug, info, warn, error/],
    [['certgen', '--local', '.', '--log-format', 'xml'], /^portico: --log-format: 'xml' is not text or json/],
  ] as const) {
    const result = spawnSync(process.execPath, [PORTICO_MAIN, ...args], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
  }
});

test('certgen logs what it wrote at info, in the format asked, and nothing at warn', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-certgen-'));
  const json = spawnSync(
    process.execPath,
    [PORTICO_MAIN, 'certgen', '--local', join(dir, 'a'), '--log-format', 'json'],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(json.status, 0, json.stderr);
  const record = JSON.parse(json.stdout.trim()) as { time: string; level: string; msg: string };
  assert.equal(record.level, 'info');
  assert.match(record.msg, /^certgen: wrote ca\.crt, ca\.key, server\.crt, server\.key to /);
  assert.ok(!Number.isNaN(Date.parse(record.time)), record.time);
  const quiet = spawnSync(
    process.execPath,
    [PORTICO_MAIN, 'certgen', '--local', join(dir, 'b'), '--log-level', 'warn'],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(quiet.status, 0, quiet.stderr);
  assert.equal(quiet.stdout, '');
  assert.ok(readFileSync(join(dir, 'b', 'ca.crt'), 'utf8').includes('BEGIN CERTIFICATE'));
});

test('portico controller refuses a status write rate that is not one, naming the flag, before it starts', () => {
  const config = join(mkdtempSync(join(tmpdir(), 'portico-controller-')), 'portico.yaml');
  writeFileSync(config, 'apiVersion: gateway.portico.io/v1alpha1\nkind: PorticoGateway\n');
  for (const [flag, value, message] of [
    ['--status-write-qps', '0', /--status-write-qps: '0' is not a number above 0/],
    ['--status-write-qps', 'fast', /--status-write-qps: 'fast' is not a number above 0/],
    ['--status-write-burst', '2.5', /--status-write-burst: '2.5' is not a whole number of at least 1/],
  ] as const) {
    const result = spawnSync(
      process.execPath,
      [PORTICO_MAIN, 'controller', '--config', config, '--proxy-image', 'p', flag, value],
      { encoding: 'utf8', timeout: 20_000 },
    );
    // Refused before it reads a kubeconfig or the service account (there is neither here): a usage error.
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, message);
    assert.doesNotMatch(result.stderr, /service account|kubeconfig/);
  }
});

test('portico standalone ends at once when it cannot start: a missing path, a taken discovery port', async () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'portico-standalone-'));
  const standalone = (...args: string[]) =>
    spawnSync(
      process.execPath,
      [PORTICO_MAIN, 'standalone', '--state-dir', stateDir, '--admin-address', '127.0.0.1:0', ...args],
      // A hang (the discovery port and the lock held after the error) ends here with no status.
      { encoding: 'utf8', timeout: 20_000 },
    );
  const missing = standalone('-f', join(stateDir, 'missing'), '--discovery-address', '127.0.0.1:0');
  assert.equal(missing.status, 1, `exited: ${missing.status} ${missing.signal} ${missing.stderr}`);
  assert.match(missing.stderr, /missing: no such file or directory/);
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = taken.address() as AddressInfo;
    const files = join(stateDir, 'files');
    mkdirSync(files);
    const busy = standalone('-f', files, '--discovery-address', `127.0.0.1:${port}`);
    assert.equal(busy.status, 1, `exited: ${busy.status} ${busy.signal} ${busy.stderr}`);
    assert.match(
      busy.stderr,
      new RegExp(
        `--discovery-address: cannot listen on 127\\.0\\.0\\.1:${port}: the address is in use .*--discovery-address, e\\.g\\. 127\\.0\\.0\\.1:0`,
      ),
    );
  } finally {
    taken.close();
  }
});

test('portico version (and --version) print the package version and the Node.js that runs it', () => {
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  for (const args of [['version'], ['--version']]) {
    const result = spawnSync(process.execPath, [PORTICO_MAIN, ...args], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(
      result.stdout,
      `portico ${version} (Node.js ${process.version}, ${process.platform}/${process.arch})\nlayer-4 relay: native\n`,
    );
  }
});

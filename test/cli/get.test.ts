import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { runGet } from '../../src/cli/get.js';
import { isPorticoError } from '../../src/platform/errors.js';
import { startAdminServer } from '../../src/provider/standalone/admin-server.js';
import { FIXTURE_NOW, fixtureState } from '../provider/standalone/fixture-state.js';
import { PORTICO_MAIN } from '../support/portico.js';

async function controller(t: { after: (fn: () => Promise<void>) => void }) {
  const server = await startAdminServer({ address: '127.0.0.1:0', getState: () => fixtureState() });
  t.after(() => server.close());
  return async (...argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await runGet([...argv, '--admin-address', server.address], {
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stderr += s;
      },
      now: () => FIXTURE_NOW,
    });
    return { code, stdout, stderr };
  };
}

test('gateways print like kubectl: NAME, CLASS, ADDRESS, PROGRAMMED, AGE', async (t) => {
  const get = await controller(t);
  const { code, stdout } = await get('gateways');
  assert.equal(code, 0);
  assert.equal(
    stdout,
    ['NAME   CLASS   ADDRESS     PROGRAMMED   AGE', 'eg     eg      127.0.1.1   True         45m', ''].join(
      '\n',
    ),
  );
});

test('-A lists every namespace with a NAMESPACE column; -n picks one', async (t) => {
  const get = await controller(t);
  const all = await get('gtw', '-A');
  assert.equal(
    all.stdout,
    [
      'NAMESPACE   NAME   CLASS   ADDRESS     PROGRAMMED   AGE',
      'default     eg     eg      127.0.1.1   True         45m',
      'team-a      web    eg                  False        3m',
      '',
    ].join('\n'),
  );
  const teamA = await get('gateway', '-n', 'team-a');
  assert.match(teamA.stdout, /^web {4}eg/m);
  assert.doesNotMatch(teamA.stdout, /^eg /m);
});

test('gatewayclasses are cluster-wide: CONTROLLER, ACCEPTED, AGE, and DESCRIPTION when wide', async (t) => {
  const get = await controller(t);
  const plain = await get('gatewayclasses', '-n', 'ignored');
  assert.equal(
    plain.stdout,
    [
      'NAME    CONTROLLER                                   ACCEPTED   AGE',
      'eg      gateway.portico.io/gatewayclass-controller   True       5h',
      'other   example.com/other                                       2m',
      '',
    ].join('\n'),
  );
  const wide = await get('gc', '-o', 'wide', '-A');
  assert.match(wide.stdout.split('\n')[0] ?? '', /^NAME {4}CONTROLLER .* AGE {3}DESCRIPTION$/);
  assert.match(wide.stdout, /the default class$/m);
});

test('httproutes show their hostnames and whether their parents accepted them and resolved their refs', async (t) => {
  const get = await controller(t);
  const { stdout } = await get('httproutes');
  assert.equal(
    stdout,
    [
      'NAME        HOSTNAMES                               ACCEPTED   RESOLVED   AGE',
      'backend     ["www.example.com","api.example.com"]   True       False      44m',
      'catch-all                                           <none>     <none>     60s',
      '',
    ].join('\n'),
  );
  const wide = await get('httproutes', '-o', 'wide');
  assert.match(wide.stdout, /^NAME .* AGE {3}PARENTS$/m);
  assert.match(wide.stdout, /^backend .* 44m {3}eg,infra\/shared\/https$/m);
});

test('gateways -o wide add ACCEPTED, LISTENERS and ATTACHED ROUTES; -o name prints kind.group/name', async (t) => {
  const get = await controller(t);
  const wide = await get('gateways', '-o', 'wide');
  assert.match(
    wide.stdout.split('\n')[0] ?? '',
    /PROGRAMMED {3}AGE {3}ACCEPTED {3}LISTENERS {3}ATTACHED ROUTES$/,
  );
  const names = await get('httproutes', '-o', 'name');
  assert.equal(
    names.stdout,
    'httproute.gateway.networking.k8s.io/backend\nhttproute.gateway.networking.k8s.io/catch-all\n',
  );
  assert.equal((await get('gtw', 'eg', '-o', 'name')).stdout, 'gateway.gateway.networking.k8s.io/eg\n');
});

test('grpcroutes show their hostnames too, and are not listed as httproutes', async (t) => {
  const get = await controller(t);
  const { stdout } = await get('grpcroutes');
  assert.equal(
    stdout,
    [
      'NAME   HOSTNAMES              ACCEPTED   RESOLVED   AGE',
      'echo   ["grpc.example.com"]   <none>     <none>     30m',
      '',
    ].join('\n'),
  );
  const yaml = parse((await get('grpcroute', 'echo', '-o', 'yaml')).stdout);
  assert.equal(yaml.kind, 'GRPCRoute');
  assert.doesNotMatch((await get('httproutes')).stdout, /echo/);
});

test('-o json and -o yaml give full objects with status', async (t) => {
  const get = await controller(t);
  const json = JSON.parse((await get('gateways', '-A', '-o', 'json')).stdout);
  assert.equal(json.kind, 'List');
  assert.equal(json.items.length, 2);
  assert.equal(json.items[0].status.addresses[0].value, '127.0.1.1');
  assert.equal(json.items[0].metadata.namespace, 'default');
  const yaml = parse((await get('httproute', 'backend', '-o', 'yaml')).stdout);
  assert.equal(yaml.kind, 'HTTPRoute');
  assert.deepEqual(yaml.spec.hostnames, ['www.example.com', 'api.example.com']);
});

test('nothing to show is said on stderr, like kubectl; a missing name is an error', async (t) => {
  const get = await controller(t);
  const empty = await get('httproutes', '-n', 'nowhere');
  assert.equal(empty.code, 0);
  assert.equal(empty.stdout, '');
  assert.equal(empty.stderr, 'No resources found in nowhere namespace.\n');
  await assert.rejects(get('gateway', 'missing'), /gateways "missing" not found in namespace default/);
  await assert.rejects(get('pods'), (e: unknown) => isPorticoError(e) && e.code === 'E_USAGE');
  await assert.rejects(get('gateways', '-o', 'xml'), /--output must be wide, name, json, yaml or jsonpath/);
});

test('-o jsonpath runs the template on the List, or on the named object, as kubectl does', async (t) => {
  const get = await controller(t);
  const names = await get('gateways', '-A', '-o', 'jsonpath={.items[*].metadata.name}');
  assert.equal(names.code, 0);
  assert.equal(names.stdout, 'eg web');
  const rows = await get(
    'gtw',
    '-A',
    '-o',
    'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.conditions[?(@.type=="Programmed")].status}{"\\n"}{end}',
  );
  assert.equal(rows.stdout, 'default/eg True\nteam-a/web False\n');
  const one = await get('gateway', 'eg', '-o', 'jsonpath={.status.addresses[0].value}');
  assert.equal(one.stdout, '127.0.1.1');
  await assert.rejects(get('gateway', 'missing', '-o', 'jsonpath={.x}'), /gateways "missing" not found/);
  await assert.rejects(get('gateways', '-o', 'jsonpath'), /-o jsonpath needs a template/);
});

test('the built CLI: -o jsonpath prints through the template; a broken one exits 2 naming its column', async (t) => {
  const server = await startAdminServer({ address: '127.0.0.1:0', getState: () => fixtureState() });
  t.after(() => server.close());
  const run = promisify(execFile);
  const ok = await run(process.execPath, [
    PORTICO_MAIN,
    'get',
    'httproutes',
    '--admin-address',
    server.address,
    '-o',
    'jsonpath={.items[0].metadata.name}',
  ]);
  assert.equal(ok.stdout, 'backend');
  const broken = spawnSync(process.execPath, [PORTICO_MAIN, 'get', 'gateways', '-o', 'jsonpath={.items[*}'], {
    encoding: 'utf8',
  });
  assert.equal(broken.status, 2);
  assert.equal(
    broken.stderr,
    [
      "portico: get: -o jsonpath: column 10: expected ']' to close the '[' at column 8",
      '  {.items[*}',
      '           ^',
      '',
    ].join('\n'),
  );
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test('the built CLI says clearly when no controller is running', async () => {
  const address = `127.0.0.1:${await freePort()}`;
  const result = spawnSync(process.execPath, [PORTICO_MAIN, 'get', 'gateways', '--admin-address', address], {
    encoding: 'utf8',
  });
  assert.equal(result.status, 1);
  assert.match(result.stderr, new RegExp(`no standalone controller answers at ${address}`));
});

test('an answer that is not a resource list is an error, not a crash', async (t) => {
  const { createServer: createHttpServer } = await import('node:http');
  const server = createHttpServer((_req, res) => res.end('hello, I am not portico'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  const io = { stdout: () => {}, stderr: () => {}, now: Date.now };
  await assert.rejects(
    runGet(['gateways', '--admin-address', `127.0.0.1:${port}`], io),
    (e: unknown) => isPorticoError(e) && /other than a resource list/.test(e.message),
  );
});

test('errors in the resource files are listed on stderr after the table, and with -o yaml', async (t) => {
  const errors = [
    {
      file: '/srv/gw.yaml',
      line: 12,
      object: 'Gateway default/eg',
      field: 'spec.listeners[0].port',
      message: 'must be ≤ 65535',
    },
    { file: '/srv/routes.yaml', line: 3, message: 'YAML: Implicit keys need to be on a single line' },
  ];
  const server = await startAdminServer({
    address: '127.0.0.1:0',
    getState: () => fixtureState(true, errors),
  });
  t.after(() => server.close());
  for (const extra of [[], ['-o', 'yaml']]) {
    let stdout = '';
    let stderr = '';
    const code = await runGet(['gateways', ...extra, '--admin-address', server.address], {
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stderr += s;
      },
      now: () => FIXTURE_NOW,
    });
    assert.equal(code, 0);
    assert.match(stdout, /eg/);
    assert.equal(
      stderr,
      [
        'warning: 2 resource file errors; objects of a broken file keep serving their last good content:',
        '  /srv/gw.yaml:12: Gateway default/eg: spec.listeners[0].port: must be ≤ 65535',
        '  /srv/routes.yaml:3: YAML: Implicit keys need to be on a single line',
        '',
      ].join('\n'),
    );
  }
});

// Live edits while traffic runs: routes and Gateways added, changed and removed by editing files; unchanged
// routes never fail a request; a broken file keeps its last good content serving and names file and line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitForOutput } from '../../support/child.js';
import { PORTICO_MAIN } from '../../support/portico.js';
import {
  adminGet,
  adminResources,
  echoBody,
  eventually,
  exampleCopy,
  programmedAddress,
  send,
  startStandalone,
  untilStatus,
} from './harness.js';

function route(name: string, hostname: string, service: string, path = '/'): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: ${name}
spec:
  parentRefs:
    - name: eg
  hostnames: [${hostname}]
  rules:
    - matches:
        - path: {type: PathPrefix, value: ${path}}
      backendRefs:
        - name: ${service}
          port: 3000
`;
}

function gateway(name: string, port: number): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: ${name}
spec:
  gatewayClassName: portico
  listeners:
    - name: http
      protocol: HTTP
      port: ${port}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: ${name}
spec:
  parentRefs:
    - name: ${name}
  rules:
    - backendRefs:
        - name: backend-api
          port: 3000
`;
}

/** Requests on an unchanged route, back to back on keep-alive connections, until stopped. */
function steadyTraffic(address: string, port: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  const failures: string[] = [];
  let ok = 0;
  let running = true;
  const loop = async () => {
    while (running) {
      try {
        const reply = await send(address, port, 'www.example.com', '/', agent);
        if (reply.status === 200 && echoBody(reply).service === 'web') ok++;
        else failures.push(`${reply.status} ${reply.body.slice(0, 80)}`);
      } catch (error) {
        failures.push(String(error));
      }
    }
  };
  const loops = [loop(), loop()];
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      agent.destroy();
      return { ok, failures };
    },
  };
}

test('routes and Gateways added, changed and removed while traffic runs; unchanged routes never fail', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.41.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  const traffic = steadyTraffic(address, 8080);

  // Add a route in a new file.
  const extra = join(files, 'extra.yaml');
  await writeFile(extra, route('extra', 'extra.example.com', 'backend-api'));
  assert.equal(echoBody(await untilStatus(address, 8080, 'extra.example.com', '/', 200)).service, 'api');
  // Change it: another backend.
  await writeFile(extra, route('extra', 'extra.example.com', 'backend-web'));
  await eventually('the changed backend', async () => {
    const reply = await send(address, 8080, 'extra.example.com', '/');
    return reply.status === 200 && echoBody(reply).service === 'web' ? true : undefined;
  });
  // Remove it.
  await rm(extra);
  await untilStatus(address, 8080, 'extra.example.com', '/', 404);

  // A second Gateway gets its own proxy and address; removing it stops that proxy.
  const second = join(files, 'second.yaml');
  await writeFile(second, gateway('second', 8081));
  const secondAddress = await programmedAddress(c.admin, 'default', 'second');
  assert.notEqual(secondAddress, address);
  assert.equal(echoBody(await untilStatus(secondAddress, 8081, 'any.example.com', '/', 200)).service, 'api');
  await rm(second);
  await eventually('the second proxy stopped', async () => {
    try {
      await send(secondAddress, 8081, 'any.example.com', '/');
      return undefined;
    } catch {
      return true;
    }
  });
  assert.deepEqual(await adminResources(c.admin, '?kind=Gateway&name=second'), []);

  const { ok, failures } = await traffic.stop();
  assert.deepEqual(failures, []);
  assert.ok(ok > 0, 'traffic ran');
});

test('a broken file is reported with file and line and keeps its last good content; other files still apply', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const extra = join(files, 'extra.yaml');
  await writeFile(extra, route('extra', 'extra.example.com', 'backend-api'));
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.42.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'extra.example.com', '/', 200);

  // YAML syntax error on line 5.
  await writeFile(
    extra,
    'apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: extra\n spec: [\n',
  );
  await waitForOutput(c.child, /error \S*extra\.yaml:5: /);
  // An invalid field in another edit of the same file: the error names object and field.
  await writeFile(
    extra,
    route('extra', 'extra.example.com', 'backend-web').replace('port: 3000', 'port: abc'),
  );
  const invalid = await waitForOutput(
    c.child,
    /error \S*extra\.yaml:(\d+): HTTPRoute default\/extra: (\S+): /,
  );
  assert.equal(invalid[1], '14');
  assert.equal(invalid[2], 'spec.rules[0].backendRefs[0].port');
  // Meanwhile a good file applies.
  await writeFile(join(files, 'other.yaml'), route('other', 'other.example.com', 'backend-web'));
  assert.equal(echoBody(await untilStatus(address, 8080, 'other.example.com', '/', 200)).service, 'web');
  // The broken file's last good content still serves, unchanged.
  const still = await send(address, 8080, 'extra.example.com', '/');
  assert.equal(still.status, 200);
  assert.equal(echoBody(still).service, 'api');
  // Not only in the log: the admin API lists the error, and the object it keeps serving says so.
  const listed = await eventually('the error in the admin API', async () => {
    const { items } = await adminGet<{ items: { file?: string; line?: number; field?: string }[] }>(
      c.admin,
      '/api/errors',
    );
    return items.find((e) => e.file === extra && e.line === 14);
  });
  assert.equal(listed.field, 'spec.rules[0].backendRefs[0].port');
  const annotated = async () => {
    const [object] = await adminResources(c.admin, '?kind=HTTPRoute&namespace=default&name=extra');
    return (object as { metadata: { annotations?: Record<string, string> } } | undefined)?.metadata
      .annotations?.['gateway.portico.io/load-errors'];
  };
  assert.match(
    (await annotated()) ?? '',
    new RegExp(`^${extra.replaceAll('.', '\\.')}:14: HTTPRoute default/extra: spec`),
  );
  const get = spawnSync(process.execPath, [PORTICO_MAIN, 'get', 'httproutes', '--admin-address', c.admin], {
    encoding: 'utf8',
  });
  assert.equal(get.status, 0, get.stderr);
  assert.match(get.stdout, /^extra\s/m);
  assert.match(get.stderr, /warning: 1 resource file error; [\s\S]*extra\.yaml:14: HTTPRoute default\/extra/);
  // Fixed: applies, and the error is gone from everywhere.
  await writeFile(extra, route('extra', 'extra.example.com', 'backend-web'));
  await eventually('the fixed file applied', async () => {
    const reply = await send(address, 8080, 'extra.example.com', '/');
    return echoBody(reply).service === 'web' ? true : undefined;
  });
  assert.deepEqual((await adminGet<{ items: unknown[] }>(c.admin, '/api/errors')).items, []);
  assert.equal(await annotated(), undefined);
});

test('what an edit does to statuses is in the log: a route to a missing Service, its fix, and an edit that changes nothing', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const extra = join(files, 'extra.yaml');
  await writeFile(extra, route('extra', 'extra.example.com', 'backend-api'));
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.44.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'extra.example.com', '/', 200);
  await writeFile(extra, route('extra', 'extra.example.com', 'backend-gone'));
  await waitForOutput(
    c.child,
    /warn HTTPRoute default\/extra: parent eg: ResolvedRefs=False \(BackendNotFound\): .*backend-gone/,
  );
  await writeFile(extra, route('extra', 'extra.example.com', 'backend-api'));
  await waitForOutput(c.child, /info HTTPRoute default\/extra: parent eg: ResolvedRefs=True again/);
  // The same objects in other words (a comment added): said, and nothing else happens.
  await writeFile(extra, `# the same route\n${route('extra', 'extra.example.com', 'backend-api')}`);
  await waitForOutput(c.child, /info no change from \S*extra\.yaml/);
  const warnings = c.child.stdout().match(/warn HTTPRoute default\/extra: /g) ?? [];
  assert.equal(warnings.length, 1, 'the problem was told once');
});

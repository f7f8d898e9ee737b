// `npm start`: the standalone quickstart. Starts the two echo backends named in examples/quickstart, then the
// standalone controller on those files, and prints the requests to try once the Gateway is programmed.
// Arguments after `--` go to `portico standalone`, e.g. to run it beside another controller:
//   npm start -- --admin-address 127.0.0.1:0 --discovery-address 127.0.0.1:0 --state-dir /tmp/qs
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const main = `${root}dist/cli/main.js`;
const controllerArgs = process.argv.slice(2);
const children = [];

function start(args, env, stdio) {
  const child = spawn(process.execPath, [main, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio,
  });
  children.push(child);
  return child;
}

for (const [service, port] of [
  ['backend-web', 3001],
  ['backend-api', 3002],
]) {
  start(
    ['echo', '--port', String(port)],
    { SERVICE_NAME: service, NAMESPACE: 'default', POD_NAME: `${service}-0` },
    ['ignore', 'ignore', 'inherit'],
  );
}

// Ctrl-C ends the demo whole: the controller drains its proxy on the way out.
const controller = start(
  ['standalone', '-f', 'examples/quickstart', '--stop-proxies-on-exit', ...controllerArgs],
  {},
  ['ignore', 'pipe', 'inherit'],
);
// At once, not after the wait below: a controller that fails at its start must fail `npm start` and take the
// backends with it.
let controllerExited = false;
let failed = false;
controller.on('exit', (code) => {
  controllerExited = true;
  stop();
  process.exitCode = failed || code !== 0 ? code || 1 : 0;
});
// The controller's output is passed through; its startup line says where the admin API really is (port 0).
let adminAddress = new Promise((resolve) => {
  let seen = '';
  controller.stdout.setEncoding('utf8').on('data', (chunk) => {
    process.stdout.write(chunk);
    seen += chunk;
    const match = /admin API on http:\/\/(\S+),/.exec(seen);
    if (match !== null) resolve(match[1]);
  });
  controller.on('exit', () => resolve(undefined));
});

/** The status of GET / with Host www.example.com at the Gateway's address, or 0 when nothing answered. */
function served(address) {
  return new Promise((resolve) => {
    const req = request(
      { host: address, port: 8080, path: '/', headers: { host: 'www.example.com' }, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.setTimeout(2_000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** The Gateway's address once it is Programmed and a request through it is answered 200: what the user tries next. */
async function gatewayAddress() {
  adminAddress = await adminAddress;
  if (adminAddress === undefined) return undefined;
  for (let attempt = 0; attempt < 200 && !controllerExited; attempt++) {
    try {
      const response = await fetch(`http://${adminAddress}/api/resources?kind=Gateway&namespace=default`);
      const body = await response.json();
      const gateway = body.items?.find((item) => item.metadata?.name === 'eg');
      const programmed = gateway?.status?.conditions?.find((c) => c.type === 'Programmed');
      const address = gateway?.status?.addresses?.[0]?.value;
      if (programmed?.status === 'True' && address && (await served(address)) === 200) return address;
    } catch {
      // the controller is still starting
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

const address = await gatewayAddress();
if (address === undefined) {
  console.error(
    'quickstart: the Gateway did not become Programmed and serve a request; see the controller output above',
  );
  // Nothing to try: stop the backends and the controller, and say so in the exit status.
  failed = true;
  stop();
  process.exitCode = 1;
} else {
  const getOption = adminAddress === '127.0.0.1:18001' ? '' : ` --admin-address ${adminAddress}`;
  console.log(`
Portico quickstart is running. Try:

  curl -i -H 'Host: www.example.com' http://${address}:8080/
  curl -i -H 'Host: www.example.com' http://${address}:8080/api/users?id=1
  curl -i -H 'Host: unknown.example.com' http://${address}:8080/     # 404, empty body
  node dist/cli/main.js get gateways${getOption}
  node dist/cli/main.js get httproutes -o yaml${getOption}

Edit examples/quickstart/*.yaml and the change applies at once. Ctrl-C stops everything.
`);
}

function stop() {
  for (const child of children) child.kill('SIGTERM');
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

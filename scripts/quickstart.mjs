// `npm start`: the standalone quickstart. Starts the two echo backends named in examples/quickstart, then the
// standalone controller on those files, and prints the requests to try once the Gateway is programmed.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const main = `${root}dist/cli/main.js`;
const adminAddress = process.env.PORTICO_ADMIN_ADDRESS ?? '127.0.0.1:18001';
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

const controller = start(
  ['standalone', '-f', 'examples/quickstart', '--admin-address', adminAddress],
  {},
  'inherit',
);

async function gatewayAddress() {
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      const response = await fetch(`http://${adminAddress}/api/resources?kind=Gateway&namespace=default`);
      const body = await response.json();
      const gateway = body.items?.find((item) => item.metadata?.name === 'eg');
      const programmed = gateway?.status?.conditions?.find((c) => c.type === 'Programmed');
      const address = gateway?.status?.addresses?.[0]?.value;
      if (programmed?.status === 'True' && address) return address;
    } catch {
      // the controller is still starting
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

const address = await gatewayAddress();
if (address === undefined) {
  console.error('quickstart: the Gateway did not become Programmed; see the controller output above');
} else {
  console.log(`
Portico quickstart is running. Try:

  curl -i -H 'Host: www.example.com' http://${address}:8080/
  curl -i -H 'Host: www.example.com' http://${address}:8080/api/users?id=1
  curl -i -H 'Host: unknown.example.com' http://${address}:8080/     # 404, empty body
  node dist/cli/main.js get gateways
  node dist/cli/main.js get httproutes -o yaml

Edit examples/quickstart/*.yaml and the change applies at once. Ctrl-C stops everything.
`);
}

function stop() {
  for (const child of children) child.kill('SIGTERM');
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
controller.on('exit', (code) => {
  stop();
  process.exitCode = code ?? 1;
});

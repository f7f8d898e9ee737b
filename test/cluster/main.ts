// `npm run cluster -- --kubeconfig PATH`: a simulated cluster in the foreground until Ctrl-C.
import { parseArgs } from 'node:util';
import { startCluster } from './harness.js';

const HELP = `usage: npm run cluster -- [--kubeconfig PATH] [--port N] [--verbose]

Starts the Portico cluster simulator (API server, node agent, service proxies) and writes a kubeconfig
for kubectl and @kubernetes/client-node. Stops on SIGINT/SIGTERM.`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      port: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port: not a port number: ${values.port}`);
    return 2;
  }
  const options: Parameters<typeof startCluster>[0] = { port };
  if (values.kubeconfig !== undefined) options.kubeconfigPath = values.kubeconfig;
  if (values.verbose) options.log = (line) => console.error(line);
  const cluster = await startCluster(options);
  console.log(`cluster simulator: API server ${cluster.server}`);
  console.log(`kubeconfig: ${cluster.kubeconfigPath}   (export KUBECONFIG=${cluster.kubeconfigPath})`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await cluster.stop();
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`cluster simulator: ${(error as Error).message}`);
    process.exitCode = 1;
  },
);

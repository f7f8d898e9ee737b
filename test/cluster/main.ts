// `npm run cluster -- --kubeconfig FILE`: starts the real single-node cluster in the foreground and writes its
// admin kubeconfig; Ctrl-C (or SIGTERM) stops it and removes everything it made. --ready-file F writes the
// cluster's directory to F once it is ready (what a test run hands to attachCluster()).
import { renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startCluster } from './harness.js';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'ready-file': { type: 'string' },
    quiet: { type: 'boolean', default: false },
  },
});
const log = (line: string) => {
  if (!values.quiet) process.stderr.write(`cluster: ${line}\n`);
};
// Ctrl-C while starting aborts the start, which removes what it made.
const starting = new AbortController();
const interrupt = () => starting.abort();
process.on('SIGINT', interrupt);
process.on('SIGTERM', interrupt);
const cluster = await startCluster({ kubeconfigPath: values.kubeconfig, log, signal: starting.signal }).catch(
  (error: Error) => {
    process.stderr.write(`cluster: ${error.message}\n`);
    process.exit(starting.signal.aborted ? 130 : 1);
  },
);
process.off('SIGINT', interrupt);
process.off('SIGTERM', interrupt);
// Written aside and renamed: whoever polls for the file never reads it half written (empty).
const readyFile = values['ready-file'];
if (readyFile !== undefined) {
  writeFileSync(`${readyFile}.part`, cluster.dir);
  renameSync(`${readyFile}.part`, readyFile);
}
process.stdout.write(
  `cluster ready: API ${cluster.server}, node ${cluster.addresses.nodeIp}, load balancers ${cluster.addresses.lbCidr}\n` +
    `KUBECONFIG=${cluster.kubeconfigPath} kubectl get nodes\n`,
);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  log('stopping');
  await cluster.stop();
  log('stopped; everything it made is removed');
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

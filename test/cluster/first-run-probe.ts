// Started by first-run.test.ts inside a private mount namespace whose /run is an empty tmpfs, as on a machine
// that never ran a cluster: starts one, stops it, and prints the host state before and what differs after.
import { startCluster } from './harness.js';
import { hostState, stateDifference } from './host-state.js';

const before = hostState();
const cluster = await startCluster();
await cluster.stop();
process.stdout.write(JSON.stringify({ before, difference: stateDifference(before, hostState()) }));

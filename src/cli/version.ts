// `portico version`: which build this is, the Node.js that runs it, and which layer-4 relay it has.
import { parseArgs } from 'node:util';
import { buildInfo } from '../platform/build-info.js';
import { nativeRelayLoads } from '../proxy/layer4/native-relay.js';

export const HELP = `usage: portico version

Prints the Portico version and the Node.js version that runs it, and what relays the proxy's TCP and TLS
listeners here: native (the relay thread the build compiled) or node (Node's sockets, and why).`;

export async function run(argv: string[]): Promise<number> {
  // An option or argument it does not take is a usage error (exit 2), as in every command.
  const { values } = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help === true) {
    console.log(HELP);
    return 0;
  }
  const { version, node } = buildInfo();
  console.log(`portico ${version} (Node.js ${node}, ${process.platform}/${process.arch})`);
  const relay = nativeRelayLoads();
  console.log(
    `layer-4 relay: ${relay === true ? 'native' : `node (the native relay does not load: ${relay.message})`}`,
  );
  return 0;
}

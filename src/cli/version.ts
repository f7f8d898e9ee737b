// `portico version`: which build this is, and the Node.js that runs it.
import { parseArgs } from 'node:util';
import { buildInfo } from '../platform/build-info.js';

export const HELP = `usage: portico version

Prints the Portico version and the Node.js version that runs it.`;

export async function run(argv: string[]): Promise<number> {
  // An option or argument it does not take is a usage error (exit 2), as in every command.
  const { values } = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help === true) {
    console.log(HELP);
    return 0;
  }
  const { version, node } = buildInfo();
  console.log(`portico ${version} (Node.js ${node}, ${process.platform}/${process.arch})`);
  return 0;
}

// `portico version`: which build this is, and the Node.js that runs it.
import { buildInfo } from '../platform/build-info.js';

export const HELP = `usage: portico version

Prints the Portico version and the Node.js version that runs it.`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(HELP);
    return 0;
  }
  const { version, node } = buildInfo();
  console.log(`portico ${version} (Node.js ${node}, ${process.platform}/${process.arch})`);
  return 0;
}

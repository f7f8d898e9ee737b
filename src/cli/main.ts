#!/usr/bin/env node
// `portico <subcommand> ...`: one executable for the controller, the proxy and the tools around them.
import { exitCodeOf, isPorticoError } from '../platform/errors.js';
import { COMMANDS } from './commands.js';
import { quietBrokenOutput } from './quiet-broken-output.js';
import { usageError } from './usage.js';

quietBrokenOutput();

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: portico <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun 'portico <command> --help' for a command's options.`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  // The spelling most tools take as well.
  const command = COMMANDS[name === '--version' ? 'version' : name];
  if (command === undefined) {
    console.error(`portico: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  const module = await command.load();
  try {
    return await module.run(rest, COMMANDS);
  } catch (error) {
    throw usageError(name, module.HELP, error);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // A message, never a stack trace: what went wrong is in it (file and line for anything loaded).
    const message = isPorticoError(error) || error instanceof Error ? error.message : String(error);
    console.error(`portico: ${message}`);
    process.exitCode = exitCodeOf(error);
  },
);

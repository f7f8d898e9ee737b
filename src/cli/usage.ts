// A command line node:util's parseArgs refuses, said in plain words: which option, what is wrong with it,
// and the command's usage. Every command's usage errors exit 2 (EXIT_USAGE).
import { PorticoError } from '../platform/errors.js';

/** What parseArgs refused, in plain words; undefined when `error` is not one of its refusals. */
export function parseArgsProblem(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) return undefined;
  const message = (error as Error).message;
  // Node names an option with a short form as '-h, --help': the long form is the one people read.
  const option = /'(?:-\w, )?(-{1,2}[^' ,<]+)/.exec(message)?.[1] ?? 'an option';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    return message.includes('argument missing') ? `${option} needs a value` : `${option} takes no value`;
  const positional = /argument '([^']*)'/.exec(message)?.[1];
  return positional === undefined ? message : `unexpected argument '${positional}'`;
}

/** `error` as the usage error of `command` (its usage appended) when parseArgs refused the line, else as it is. */
export function usageError(command: string, help: string, error: unknown): unknown {
  const problem = parseArgsProblem(error);
  if (problem === undefined) return error;
  return new PorticoError('E_USAGE', `${command}: ${problem}\n\n${help}`, { cause: error });
}

// `--log-level`: the same word list and the same error for every command that takes it.
import { PorticoError } from '../platform/errors.js';
import { isLogLevel, LOG_LEVELS, type LogLevel } from '../platform/log-line.js';

export const LOG_LEVEL_HELP = `  --log-level LEVEL         debug, info (default), warn or error`;

export function logLevelOption(value: string): LogLevel {
  if (!isLogLevel(value))
    throw new PorticoError('E_USAGE', `--log-level: '${value}' is not ${LOG_LEVELS.join(', ')}`);
  return value;
}

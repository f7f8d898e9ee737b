// `--log-level` and `--log-format`: the same word lists and the same errors for every command that takes them.
import { PorticoError } from '../platform/errors.js';
import {
  isLogFormat,
  isLogLevel,
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevel,
} from '../platform/log-line.js';

export const LOG_LEVEL_HELP = `  --log-level LEVEL         debug, info (default), warn or error`;
export const LOG_FORMAT_HELP = `  --log-format FORMAT       text (default: time, level, message) or json (one object a line)`;

export function logLevelOption(value: string): LogLevel {
  if (!isLogLevel(value))
    throw new PorticoError('E_USAGE', `--log-level: '${value}' is not ${LOG_LEVELS.join(', ')}`);
  return value;
}

export function logFormatOption(value: string): LogFormat {
  if (!isLogFormat(value))
    throw new PorticoError('E_USAGE', `--log-format: '${value}' is not ${LOG_FORMATS.join(' or ')}`);
  return value;
}

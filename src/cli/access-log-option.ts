// `portico proxy`'s access log flags as the runtime's option: on (JSON, every field, every request) unless told.

import { ACCESS_LOG_FIELDS } from '../ir/access-log.js';
import { PorticoError } from '../platform/errors.js';
import { type AccessLogOptions, accessLogFields } from '../proxy/access-log.js';

export const ACCESS_LOG_FLAGS_HELP = `  --access-log FORMAT       one line per request on stdout: json (default), text or off
  --access-log-fields A,B   the fields of a line, in order (default: all): ${ACCESS_LOG_FIELDS.join(', ')}
  --access-log-sampling P   percent of requests logged, 0 to 100 (default 100)`;

export function accessLogOption(
  format: string,
  fields: string | undefined,
  sampling: string,
): Omit<AccessLogOptions, 'write'> | undefined {
  if (format === 'off') return undefined;
  if (format !== 'json' && format !== 'text')
    throw new PorticoError('E_USAGE', `--access-log: expected json, text or off, got '${format}'`);
  const percent = Number(sampling);
  if (sampling.trim() === '' || !Number.isFinite(percent) || percent < 0 || percent > 100)
    throw new PorticoError(
      'E_USAGE',
      `--access-log-sampling: expected a percentage from 0 to 100, got '${sampling}'`,
    );
  const names = fields === undefined ? [...ACCESS_LOG_FIELDS] : fields.split(',').map((f) => f.trim());
  return { format, fields: accessLogFields(names, '--access-log-fields'), sampling: percent / 100 };
}

// `portico proxy`'s telemetry flags as the runtime's options: the access log on (JSON, every field, every request)
// unless told, tracing off unless given a collector.

import { ACCESS_LOG_FIELDS, isRedactableQueryName, MAX_REDACTED_QUERY_NAMES } from '../ir/access-log.js';
import { shareOfPercent } from '../ir/proxy-settings.js';
import { PorticoError } from '../platform/errors.js';
import { type AccessLogOptions, accessLogFields } from '../proxy/telemetry/access-log.js';
import { type TracingOptions, tracingEndpoint } from '../proxy/telemetry/span-exporter.js';

export const ACCESS_LOG_FLAGS_HELP = `  --access-log FORMAT       one line per request on stdout: json (default), text or off
  --access-log-fields A,B   the fields of a line, in order (default: all): ${ACCESS_LOG_FIELDS.join(', ')}
  --access-log-sampling P   percent of requests logged, 0 to 100 (default 100)
  --access-log-redact-query A,B
                            query parameters whose values a line shows as REDACTED (default: none)`;

export function accessLogOption(
  format: string,
  fields: string | undefined,
  sampling: string,
  redactQuery?: string,
): Omit<AccessLogOptions, 'write'> | undefined {
  if (format === 'off') return undefined;
  if (format !== 'json' && format !== 'text')
    throw new PorticoError('E_USAGE', `--access-log: expected json, text or off, got '${format}'`);
  const share = shareOf('--access-log-sampling', sampling);
  const names = fields === undefined ? [...ACCESS_LOG_FIELDS] : fields.split(',').map((f) => f.trim());
  const options: Omit<AccessLogOptions, 'write'> = {
    format,
    fields: accessLogFields(names, '--access-log-fields'),
    sampling: share,
  };
  return redactQuery === undefined ? options : { ...options, redactQuery: queryNames(redactQuery) };
}

/** `--access-log-redact-query`'s names, each one the settings could carry too. */
function queryNames(value: string): string[] {
  const names = value.split(',').map((n) => n.trim());
  if (names.length > MAX_REDACTED_QUERY_NAMES || !names.every(isRedactableQueryName))
    throw new PorticoError(
      'E_USAGE',
      `--access-log-redact-query: expected at most ${MAX_REDACTED_QUERY_NAMES} names of 1 to 128 characters, got '${value}'`,
    );
  return names;
}

export const TRACING_FLAGS_HELP = `  --tracing-endpoint URL    export spans by OTLP/HTTP (JSON) to this collector URL, e.g.
                            http://otel-collector:4318/v1/traces; traceparent is then continued or started
                            (default: off, a client's traceparent passes on untouched)
  --tracing-sampling P      percent of the traces the proxy starts that are sampled (default 100); a
                            caller's own sampling decision is kept`;

export function tracingOption(endpoint: string | undefined, sampling: string): TracingOptions | undefined {
  const share = shareOf('--tracing-sampling', sampling);
  if (endpoint === undefined) return undefined;
  return { endpoint: tracingEndpoint(endpoint, '--tracing-endpoint').href, sampling: share };
}

/** A percentage flag (0 to 100) as a share (0 to 1). */
function shareOf(flag: string, value: string): number {
  const percent = Number(value);
  if (value.trim() === '' || !Number.isFinite(percent) || percent < 0 || percent > 100)
    throw new PorticoError('E_USAGE', `${flag}: expected a percentage from 0 to 100, got '${value}'`);
  return shareOfPercent(percent);
}

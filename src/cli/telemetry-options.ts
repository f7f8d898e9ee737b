// `portico proxy`'s telemetry flags, as its help says them: the access log on (JSON, every field, every request)
// unless told, tracing off unless given a collector. The table in ir/proxy-flags.ts writes and parses them.

import { ACCESS_LOG_FIELDS } from '../ir/access-log.js';

export const ACCESS_LOG_FLAGS_HELP = `  --access-log FORMAT       one line per request on stdout: json (default), text or off
  --access-log-fields A,B   the fields of a line, in order (default: all): ${ACCESS_LOG_FIELDS.join(', ')}
  --access-log-sampling P   percent of requests logged, 0 to 100 (default 100)
  --access-log-redact-query A,B
                            query parameters whose values a line shows as REDACTED (default: none)`;

export const TRACING_FLAGS_HELP = `  --tracing-endpoint URL    export spans by OTLP/HTTP (JSON) to this collector URL, e.g.
                            http://otel-collector:4318/v1/traces; traceparent is then continued or started
                            (default: off, a client's traceparent passes on untouched)
  --tracing-sampling P      percent of the traces the proxy starts that are sampled (default 100); a
                            caller's own sampling decision is kept`;

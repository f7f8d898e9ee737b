// The access log as a fleet's proxies are told to write it: the field names (the DataPlaneProxy API, the
// translator's check and the proxy's lines all use this one list); ir/proxy-flags.ts turns it into flags.

/** Every field a line can carry, in the order a line shows them by default. */
export const ACCESS_LOG_FIELDS = [
  'start_time',
  'method',
  'authority',
  'path',
  'protocol',
  'status',
  'response_flags',
  'bytes_received',
  'bytes_sent',
  'duration_ms',
  'upstream_host',
  'upstream_service_time_ms',
  'upstream_retries',
  'route_name',
  'listener',
  'request_id',
  'client_address',
  'access_reason',
] as const;
export type AccessLogField = (typeof ACCESS_LOG_FIELDS)[number];

export function isAccessLogField(name: string): name is AccessLogField {
  return (ACCESS_LOG_FIELDS as readonly string[]).includes(name);
}

export const MAX_REDACTED_QUERY_NAMES = 32;

/** A query parameter name the proxy can be told to redact: what its flag (a comma-separated list) carries. */
export function isRedactableQueryName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= 128 && !name.includes(',');
}

/** A fleet's access log as its DataPlaneProxy sets it; absent: the proxy's default (JSON, every field, all). */
export interface FleetAccessLog {
  format: 'json' | 'text' | 'off';
  /** Absent: every field. */
  fields?: AccessLogField[];
  /** Percent of requests logged; absent: 100. */
  sampling?: number;
  /** Query parameters whose values a line shows as REDACTED; absent: none. */
  redactQueryParameters?: string[];
}

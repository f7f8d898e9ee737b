// The access log as a fleet's proxies are told to write it: the field names (the DataPlaneProxy API, the
// translator's check and the proxy's lines all use this one list) and the `portico proxy` flags that carry it.

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
  'route_name',
  'listener',
  'request_id',
  'client_address',
] as const;
export type AccessLogField = (typeof ACCESS_LOG_FIELDS)[number];

export function isAccessLogField(name: string): name is AccessLogField {
  return (ACCESS_LOG_FIELDS as readonly string[]).includes(name);
}

/** A fleet's access log as its DataPlaneProxy sets it; absent: the proxy's default (JSON, every field, all). */
export interface FleetAccessLog {
  format: 'json' | 'text' | 'off';
  /** Absent: every field. */
  fields?: AccessLogField[];
  /** Percent of requests logged; absent: 100. */
  sampling?: number;
}

/** The `portico proxy` flags for `log` (none for the default). */
export function accessLogArgs(log: FleetAccessLog | undefined): string[] {
  if (log === undefined) return [];
  const args = ['--access-log', log.format];
  if (log.format === 'off') return args;
  if (log.fields !== undefined) args.push('--access-log-fields', log.fields.join(','));
  if (log.sampling !== undefined) args.push('--access-log-sampling', String(log.sampling));
  return args;
}

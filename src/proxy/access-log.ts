// The access log: one line per finished request, JSON or text, with the fields the operator chose. Lines are
// gathered and written once per event-loop turn, in writes of at most PIPE_BUF bytes that end on a line: the
// workers of one proxy share its stdout, and a pipe keeps only writes that small whole.
import { ACCESS_LOG_FIELDS, type AccessLogField, isAccessLogField } from '../ir/access-log.js';
import { PorticoError } from '../platform/errors.js';

export type AccessLogFormat = 'json' | 'text';

/** Why the proxy answered as it did, when the backend's own answer does not say it all. */
export type ResponseFlag =
  | 'no_route'
  | 'no_backend'
  | 'no_healthy_upstream'
  | 'upstream_connect_failure'
  | 'upstream_reset'
  | 'upstream_timeout'
  | 'invalid_upstream_response'
  | 'invalid_request'
  | 'request_timeout'
  | 'client_disconnect';

export interface AccessLogOptions {
  format: AccessLogFormat;
  fields: readonly AccessLogField[];
  /** The share of requests logged, 0 to 1. */
  sampling: number;
  /** Where the lines go; default: the process's stdout. */
  write?: (text: string) => void;
}

/** One finished request, as the handler saw it; values the request never had are undefined. */
export interface AccessLogEntry {
  /** When the request arrived, ms since the epoch. */
  startMs: number;
  method: string;
  authority: string | undefined;
  path: string;
  protocol: string;
  /** 0 when no response head was sent. */
  status: number;
  flag: ResponseFlag | undefined;
  bytesReceived: number;
  bytesSent: number;
  durationMs: number;
  upstreamHost: string | undefined;
  upstreamServiceTimeMs: number | undefined;
  routeName: string;
  listener: string;
  requestId: string | undefined;
  clientAddress: string | undefined;
}

type FieldValue = string | number | undefined;

const VALUE: Record<AccessLogField, (e: AccessLogEntry) => FieldValue> = {
  start_time: (e) => new Date(e.startMs).toISOString(),
  method: (e) => e.method,
  authority: (e) => e.authority,
  path: (e) => e.path,
  protocol: (e) => e.protocol,
  status: (e) => e.status,
  response_flags: (e) => e.flag,
  bytes_received: (e) => e.bytesReceived,
  bytes_sent: (e) => e.bytesSent,
  duration_ms: (e) => Math.round(e.durationMs * 1000) / 1000,
  upstream_host: (e) => e.upstreamHost,
  upstream_service_time_ms: (e) => e.upstreamServiceTimeMs,
  route_name: (e) => (e.routeName === '-' ? undefined : e.routeName),
  listener: (e) => e.listener,
  request_id: (e) => e.requestId,
  client_address: (e) => e.clientAddress,
};

/** `fields` as given, or a PorticoError naming the unknown one. */
export function accessLogFields(names: readonly string[], source: string): AccessLogField[] {
  for (const name of names) {
    if (!isAccessLogField(name))
      throw new PorticoError(
        'E_USAGE',
        `${source}: unknown access log field '${name}' (known: ${ACCESS_LOG_FIELDS.join(', ')})`,
      );
  }
  return names as AccessLogField[];
}

/** One JSON object per line; absent values are left out. */
export function jsonLine(entry: AccessLogEntry, fields: readonly AccessLogField[]): string {
  const out: Record<string, string | number> = {};
  for (const field of fields) {
    const value = VALUE[field](entry);
    if (value !== undefined) out[field] = value;
  }
  return JSON.stringify(out);
}

/** `field=value` pairs; a value with a space, quote or control character is JSON-quoted; absent values are `-`. */
export function textLine(entry: AccessLogEntry, fields: readonly AccessLogField[]): string {
  let line = '';
  for (const field of fields) {
    const value = VALUE[field](entry);
    const text = value === undefined ? '-' : String(value);
    line += `${line === '' ? '' : ' '}${field}=${needsQuotes(text) ? JSON.stringify(text) : text}`;
  }
  return line;
}

function needsQuotes(text: string): boolean {
  if (text === '') return true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 32 || c === 34 || c === 92 || c >= 127) return true;
  }
  return false;
}

/** Linux's PIPE_BUF: a write to a pipe at most this long is never interleaved with another process's. */
const ATOMIC_WRITE_BYTES = 4096;

export class AccessLog {
  private pending: string[] = [];
  private scheduled = false;
  private readonly write: (text: string) => void;
  private readonly format: (entry: AccessLogEntry, fields: readonly AccessLogField[]) => string;

  constructor(private readonly options: AccessLogOptions) {
    this.write = options.write ?? ((text) => process.stdout.write(text));
    this.format = options.format === 'json' ? jsonLine : textLine;
  }

  /** Whether this request is one of the sampled ones; decided when it starts, so nothing is gathered for others. */
  sampled(): boolean {
    const share = this.options.sampling;
    return share >= 1 || (share > 0 && Math.random() < share);
  }

  record(entry: AccessLogEntry): void {
    this.pending.push(this.format(entry, this.options.fields));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes what was gathered (also on drain and shutdown). */
  flush(): void {
    this.scheduled = false;
    const lines = this.pending;
    if (lines.length === 0) return;
    this.pending = [];
    let piece = '';
    let pieceBytes = 0;
    for (const line of lines) {
      const bytes = Buffer.byteLength(line) + 1;
      if (pieceBytes > 0 && pieceBytes + bytes > ATOMIC_WRITE_BYTES) {
        this.write(piece);
        piece = '';
        pieceBytes = 0;
      }
      piece += `${line}\n`;
      pieceBytes += bytes;
    }
    this.write(piece);
  }
}

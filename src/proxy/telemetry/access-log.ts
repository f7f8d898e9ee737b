// The access log: one line per finished request, JSON or text, with the fields the operator chose. Lines are
// gathered into writes of at most PIPE_BUF bytes that end on a line (the workers of one proxy share its stdout,
// and a pipe keeps only writes that small whole), written when the next line would not fit or a second after the
// first one waiting: a write per line was most of the log's cost.
import { ACCESS_LOG_FIELDS, type AccessLogField, isAccessLogField } from '../../ir/access-log.js';
import { PorticoError } from '../../platform/errors.js';

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
  | 'client_disconnect'
  /** An AccessPolicy refused the request (the reason is the line's `access_reason`). */
  | 'access_denied';

export interface AccessLogOptions {
  format: AccessLogFormat;
  fields: readonly AccessLogField[];
  /** The share of requests logged, 0 to 1. */
  sampling: number;
  /** Query parameters whose values a line shows as REDACTED; absent: none. */
  redactQuery?: readonly string[];
  /** Where the lines go; default: the process's stdout. */
  write?: (text: string) => void;
  /** The longest a line waits to share a write with others; default 1 s. */
  flushIntervalMs?: number;
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
  /** Times a route retry policy sent the request again; undefined: none. */
  upstreamRetries: number | undefined;
  routeName: string;
  listener: string;
  requestId: string | undefined;
  clientAddress: string | undefined;
  /** Why an AccessPolicy refused the request: policy, rule and reason, never a credential. */
  accessReason: string | undefined;
}

type FieldValue = string | number | undefined;

/** A field's value in an entry; `time` renders the start time (one Date per second, not per line). */
type FieldReader = (e: AccessLogEntry, time: StartTime) => FieldValue;

const VALUE: Record<AccessLogField, FieldReader> = {
  start_time: (e, time) => time.iso(e.startMs),
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
  upstream_retries: (e) => e.upstreamRetries,
  route_name: (e) => (e.routeName === '-' ? undefined : e.routeName),
  listener: (e) => e.listener,
  request_id: (e) => e.requestId,
  client_address: (e) => e.clientAddress,
  access_reason: (e) => e.accessReason,
};

/**
 * ISO 8601 times in ms, the second's text built once: a line per request would otherwise cost a Date and its
 * formatting each (a measurable share of the log's cost).
 */
export class StartTime {
  private second = Number.NaN;
  private prefix = '';

  iso(ms: number): string {
    const whole = Math.floor(ms);
    const second = Math.floor(whole / 1000);
    if (second !== this.second) {
      this.second = second;
      this.prefix = new Date(second * 1000).toISOString().slice(0, 20);
    }
    const milli = whole - second * 1000;
    return `${this.prefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
  }
}

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

/** Renders one entry as one line (no newline). */
export type LineFormat = (entry: AccessLogEntry) => string;

/** The line format for `format` and `fields`, its per-field work decided once rather than per line. */
export function lineFormat(
  format: AccessLogFormat,
  fields: readonly AccessLogField[],
  redactQuery: readonly string[] = [],
): LineFormat {
  const time = new StartTime();
  const redacted = new Set(redactQuery);
  const path: FieldReader = (e) => redactedPath(e.path, redacted);
  const readers = fields.map((field) => (field === 'path' && redacted.size > 0 ? path : VALUE[field]));
  return format === 'json' ? jsonFormat(fields, readers, time) : textFormat(fields, readers, time);
}

/** One JSON object per line; absent values are left out. Built by hand: JSON.stringify of an object per line costs more. */
function jsonFormat(fields: readonly AccessLogField[], readers: FieldReader[], time: StartTime): LineFormat {
  const keys = fields.map((field) => `"${field}":`);
  return (entry) => {
    let line = '{';
    for (let i = 0; i < readers.length; i++) {
      const value = readers[i]!(entry, time);
      if (value === undefined) continue;
      line += `${line.length === 1 ? '' : ','}${keys[i]}${typeof value === 'number' ? String(value) : jsonString(value)}`;
    }
    return `${line}}`;
  };
}

/** `field=value` pairs; a value with a space, quote or control character is JSON-quoted; absent values are `-`. */
function textFormat(fields: readonly AccessLogField[], readers: FieldReader[], time: StartTime): LineFormat {
  const keys = fields.map((field, i) => `${i === 0 ? '' : ' '}${field}=`);
  return (entry) => {
    let line = '';
    for (let i = 0; i < readers.length; i++) {
      const value = readers[i]!(entry, time);
      const text = value === undefined ? '-' : String(value);
      line += `${keys[i]}${needsQuotes(text) ? asciiJsonString(text) : text}`;
    }
    return line;
  };
}

/** What a query value becomes when its parameter's name is one to redact. */
const REDACTED = 'REDACTED';

/**
 * `path` with the value of every query parameter named in `names` (as sent, or percent-decoded: `%74oken` is
 * `token`) replaced by REDACTED; the names, the order and the other parameters stay as they came.
 */
export function redactedPath(path: string, names: ReadonlySet<string>): string {
  const query = path.indexOf('?');
  if (query < 0) return path;
  const pairs = path.slice(query + 1).split('&');
  let changed = false;
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i]!;
    const equals = pair.indexOf('=');
    const name = equals < 0 ? pair : pair.slice(0, equals);
    if (!names.has(name) && !names.has(decodedName(name))) continue;
    pairs[i] = `${name}=${REDACTED}`;
    changed = true;
  }
  return changed ? `${path.slice(0, query + 1)}${pairs.join('&')}` : path;
}

/** A query name percent-decoded (`+` is a space in a form), or as it is when its escapes are malformed. */
function decodedName(name: string): string {
  if (!name.includes('%') && !name.includes('+')) return name;
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}

/** A JSON string literal: printable ASCII without quote or backslash as is, anything else escaped. */
function jsonString(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 32 || c === 34 || c === 92 || c >= 127) return asciiJsonString(text);
  }
  return `"${text}"`;
}

/**
 * JSON.stringify's literal with every character past ASCII as \uXXXX: it leaves U+0085, U+2028 and U+2029 raw,
 * and a reader that splits on Unicode line breaks would cut the line there (an h2 `:path` byte 0x85 is one).
 */
function asciiJsonString(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
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

/** How long a line may wait for others to fill a write, unless told otherwise. */
const FLUSH_INTERVAL_MS = 1_000;

export class AccessLog {
  private pending = '';
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | undefined = undefined;
  private readonly write: (text: string) => void;
  private readonly format: LineFormat;
  private readonly flushIntervalMs: number;

  constructor(private readonly options: AccessLogOptions) {
    this.write = options.write ?? ((text) => process.stdout.write(text));
    this.format = lineFormat(options.format, options.fields, options.redactQuery);
    this.flushIntervalMs = options.flushIntervalMs ?? FLUSH_INTERVAL_MS;
  }

  /** Whether this request is one of the sampled ones; decided when it starts, so nothing is gathered for others. */
  sampled(): boolean {
    const share = this.options.sampling;
    return share >= 1 || (share > 0 && Math.random() < share);
  }

  record(entry: AccessLogEntry): void {
    const line = `${this.format(entry)}\n`;
    const bytes = Buffer.byteLength(line);
    if (this.pendingBytes > 0 && this.pendingBytes + bytes > ATOMIC_WRITE_BYTES) this.writePending();
    this.pending += line;
    this.pendingBytes += bytes;
    // Unref'd: a line waiting never keeps a process alive; close() flushes before a proxy exits.
    this.timer ??= setTimeout(() => this.flush(), this.flushIntervalMs).unref();
  }

  /** Writes what was gathered (on the timer, and on drain and shutdown). */
  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pendingBytes > 0) this.writePending();
  }

  private writePending(): void {
    const text = this.pending;
    this.pending = '';
    this.pendingBytes = 0;
    this.write(text);
  }
}

// One rule for every log line: values from resources, files and requests (names, paths, messages) may hold line
// breaks or terminal escapes, and written raw they forge lines. Every sink writes through escapeLogLine, so a line
// is one line whatever it quotes. Backslashes stay as they are: an escaped line can only ever be one line.

const NAMED: Record<number, string> = { 10: '\\n', 13: '\\r', 9: '\\t' };

/** C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators. */
function unsafe(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029;
}

function escapeCode(code: number): string {
  const named = NAMED[code];
  if (named !== undefined) return named;
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

export function escapeLogLine(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!unsafe(code)) continue;
    out += text.slice(from, i) + escapeCode(code);
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** Writes `line` (escaped) and a newline to stdout: the controllers' log. */
export function logToStdout(line: string): void {
  console.log(escapeLogLine(line));
}

/** Writes `line` (escaped) and a newline to stderr: errors of one-shot commands. */
export function logToStderr(line: string): void {
  console.error(escapeLogLine(line));
}

/**
 * Writes `line` (escaped) to stderr after the time (ISO 8601, UTC, ms): the proxy's log, which a file or a
 * container runtime may keep without times of its own (standalone's `<state-dir>/logs/`).
 */
export function logToStderrTimed(line: string): void {
  console.error(`${new Date().toISOString()} ${escapeLogLine(line)}`);
}

/** `2026-11-28T06:10:00.123Z ` as logToStderrTimed writes it. */
const LINE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z /;

/** How a process writes its log: `text` (time, level, message) or `json` (one object a line). */
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export function isLogFormat(value: string): value is LogFormat {
  return (LOG_FORMATS as readonly string[]).includes(value);
}

/**
 * One log record as a JSON line: `{"time":…,"level":…,"msg":…}`, time in RFC 3339 (UTC, ms). JSON.stringify
 * escapes every control character; the line and paragraph separators it leaves are escaped too, so a record is
 * one line for every reader.
 */
export function jsonLogRecord(time: Date, level: LogLevel, message: string): string {
  return JSON.stringify({ time: time.toISOString(), level, msg: message })
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

/**
 * A sink for createLogger that writes each line in `format` with its time to `write` (stdout by default): text
 * as `<time> <level> <message>` (escaped, as logToStderrTimed writes), json as jsonLogRecord. A line without a
 * level word counts as info.
 */
export function logSink(
  format: LogFormat,
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
  now: () => Date = () => new Date(),
): (line: string) => void {
  if (format === 'text') return (line) => write(`${now().toISOString()} ${escapeLogLine(line)}`);
  return (line) => {
    const { level, text } = splitLogLevel(line);
    write(jsonLogRecord(now(), level ?? 'info', text));
  };
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Lines by severity; a line below the logger's level is dropped, the others are prefixed with their level. */
export interface Logger {
  debug(line: string): void;
  info(line: string): void;
  warn(line: string): void;
  error(line: string): void;
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** A logger whose level its creator may change while it runs (a proxy's, by its settings). */
export interface AdjustableLogger extends Logger {
  setLevel(level: LogLevel): void;
}

export function createLogger(level: LogLevel, sink: (line: string) => void = logToStdout): AdjustableLogger {
  let at = LOG_LEVELS.indexOf(level);
  const emit = (l: LogLevel) => (line: string) => {
    if (LOG_LEVELS.indexOf(l) >= at) sink(`${l} ${line}`);
  };
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    setLevel(next) {
      at = LOG_LEVELS.indexOf(next);
    },
  };
}

/**
 * A line as createLogger wrote it (after its time, when a timed sink wrote one; or a JSON record a json sink
 * wrote), split into its level and its text; a line without a level word has none.
 */
export function splitLogLevel(timedLine: string): { level: LogLevel | undefined; text: string } {
  const record = jsonRecordOf(timedLine);
  if (record !== undefined) return record;
  const time = LINE_TIME.exec(timedLine);
  const line = time === null ? timedLine : timedLine.slice(time[0].length);
  const space = line.indexOf(' ');
  const word = space < 0 ? '' : line.slice(0, space);
  return isLogLevel(word) ? { level: word, text: line.slice(space + 1) } : { level: undefined, text: line };
}

/** A line jsonLogRecord wrote, read back; undefined for any other line. */
function jsonRecordOf(line: string): { level: LogLevel | undefined; text: string } | undefined {
  if (!line.startsWith('{"time":')) return undefined;
  try {
    const record = JSON.parse(line) as { level?: unknown; msg?: unknown };
    if (typeof record.msg !== 'string') return undefined;
    const level = typeof record.level === 'string' && isLogLevel(record.level) ? record.level : undefined;
    return { level, text: escapeLogLine(record.msg) };
  } catch {
    return undefined;
  }
}

/** The logger of a module nobody gave one: every line dropped. The one such default, so none writes on its own. */
export const discardingLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

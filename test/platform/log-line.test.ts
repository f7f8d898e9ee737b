// The leveled logger: lines below its level are dropped, the rest carry their level and stay one line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createLogger,
  discardingLogger,
  jsonLogRecord,
  logSink,
  logToStderrTimed,
  splitLogLevel,
} from '../../src/platform/log-line.js';

test('a logger drops lines below its level and prefixes the others', () => {
  const lines: string[] = [];
  const log = createLogger('warn', (l) => lines.push(l));
  log.debug('d');
  log.info('i');
  log.warn('w');
  log.error('e');
  assert.deepEqual(lines, ['warn w', 'error e']);
  const all: string[] = [];
  const verbose = createLogger('debug', (l) => all.push(l));
  verbose.debug('d');
  verbose.info('i');
  assert.deepEqual(all, ['debug d', 'info i']);
});

test('a line a logger wrote splits back into its level and text; other lines have no level', () => {
  const lines: string[] = [];
  createLogger('debug', (l) => lines.push(l)).warn('listener a: in use');
  assert.deepEqual(splitLogLevel(lines[0] ?? ''), { level: 'warn', text: 'listener a: in use' });
  assert.deepEqual(splitLogLevel('    at main (file.js:1)'), {
    level: undefined,
    text: '    at main (file.js:1)',
  });
  assert.deepEqual(splitLogLevel('warning: not a level word'), {
    level: undefined,
    text: 'warning: not a level word',
  });
  assert.deepEqual(splitLogLevel('info'), { level: undefined, text: 'info' });
});

test("the proxy's stderr lines start with their time, which splitting sets aside", (t) => {
  const written = t.mock.method(console, 'error', () => {});
  createLogger('info', logToStderrTimed).warn('listener a:\nin use');
  const line = String(written.mock.calls[0]?.arguments[0]);
  const time = line.slice(0, line.indexOf(' '));
  assert.match(time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.ok(Math.abs(Date.parse(time) - Date.now()) < 60_000, `${time} is now`);
  assert.deepEqual(splitLogLevel(line), { level: 'warn', text: 'listener a:\\nin use' });
});

test('the discarding logger takes every level and writes nothing', (t) => {
  const written = t.mock.method(process.stdout, 'write');
  const errors = t.mock.method(process.stderr, 'write');
  discardingLogger.debug('d');
  discardingLogger.info('i');
  discardingLogger.warn('w');
  discardingLogger.error('e');
  assert.equal(written.mock.callCount() + errors.mock.callCount(), 0);
});

test('a text sink puts the time before each line; a json sink writes one record a line', () => {
  const at = new Date('2026-11-28T10:00:00.123Z');
  const text: string[] = [];
  createLogger(
    'info',
    logSink(
      'text',
      (l) => text.push(l),
      () => at,
    ),
  ).warn('listener a:\nin use');
  assert.deepEqual(text, ['2026-11-28T10:00:00.123Z warn listener a:\\nin use']);
  const json: string[] = [];
  const sink = logSink(
    'json',
    (l) => json.push(l),
    () => at,
  );
  createLogger('info', sink).error('bad\u2028forged "line"');
  sink('a line without a level word');
  assert.equal(json.length, 2);
  assert.ok(
    json.every((l) => !/[\n\r\u2028\u2029]/.test(l)),
    'each record is one line',
  );
  assert.deepEqual(JSON.parse(json[0]!), {
    time: '2026-11-28T10:00:00.123Z',
    level: 'error',
    msg: 'bad\u2028forged "line"',
  });
  assert.deepEqual(JSON.parse(json[1]!), {
    time: '2026-11-28T10:00:00.123Z',
    level: 'info',
    msg: 'a line without a level word',
  });
});

test('a json record splits back into its level and its text, as a timed text line does', () => {
  const record = jsonLogRecord(new Date(), 'warn', 'listener a:\nin use');
  assert.deepEqual(splitLogLevel(record), { level: 'warn', text: 'listener a:\\nin use' });
  assert.deepEqual(splitLogLevel('{"time": not json'), { level: undefined, text: '{"time": not json' });
});

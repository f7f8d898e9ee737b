// The leveled logger: lines below its level are dropped, the rest carry their level and stay one line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/platform/log-line.js';

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

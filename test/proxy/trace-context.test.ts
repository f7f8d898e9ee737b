// W3C traceparent parsing and the decision a proxy makes for each request: continue a valid trace with its own
// sampling, start one otherwise.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  parseTraceparent,
  TraceIds,
  traceContextFor,
  traceparentOf,
} from '../../src/proxy/telemetry/trace-context.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('traceparent', () => {
  it('reads a version-00 value and its sampled flag', () => {
    assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`), {
      traceId: TRACE,
      parentSpanId: SPAN,
      sampled: true,
    });
    assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.sampled, false);
    assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled, true, 'other flag bits are ignored');
  });

  it('refuses what may not be continued', () => {
    for (const bad of [
      '',
      `00-${TRACE}-${SPAN}-0`,
      `00-${TRACE}-${SPAN}-01-extra`, // version 00 has nothing after the flags
      `ff-${TRACE}-${SPAN}-01`,
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00_${TRACE}-${SPAN}-01`,
      `00-${TRACE.slice(0, 31)}g-${SPAN}-01`,
      `0x-${TRACE}-${SPAN}-01`,
    ]) {
      assert.equal(parseTraceparent(bad), undefined, bad);
    }
  });

  it('reads a later version by its version-00 prefix', () => {
    assert.equal(parseTraceparent(`01-${TRACE}-${SPAN}-01-what-comes-next`)?.traceId, TRACE);
    assert.equal(parseTraceparent(`01-${TRACE}-${SPAN}-01x`), undefined);
  });

  it('continues one valid trace with a new span and the caller as parent', () => {
    const ids = new TraceIds();
    const context = traceContextFor([`00-${TRACE}-${SPAN}-00`], ids, 1);
    assert.equal(context.traceId, TRACE);
    assert.equal(context.parentSpanId, SPAN);
    assert.notEqual(context.spanId, SPAN);
    assert.match(context.spanId, /^[0-9a-f]{16}$/);
    assert.equal(context.sampled, false, "the caller's decision wins over the proxy's share");
    assert.equal(traceparentOf(context), `00-${TRACE}-${context.spanId}-00`);
  });

  it('starts a trace for none, an invalid one or several, sampled at the share', () => {
    const ids = new TraceIds();
    for (const received of [[], ['nonsense'], [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`]]) {
      const context = traceContextFor(received, ids, 0.5, () => 0.25);
      assert.notEqual(context.traceId, TRACE);
      assert.match(context.traceId, /^[0-9a-f]{32}$/);
      assert.equal(context.parentSpanId, undefined);
      assert.equal(context.sampled, true);
    }
    assert.equal(traceContextFor([], ids, 0.5, () => 0.75).sampled, false);
    assert.equal(traceContextFor([], ids, 0, () => 0).sampled, false);
  });

  it('draws ids that differ, across refills of its random block', () => {
    const ids = new TraceIds();
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) seen.add(ids.traceId()).add(ids.spanId());
    assert.equal(seen.size, 2000);
  });
});

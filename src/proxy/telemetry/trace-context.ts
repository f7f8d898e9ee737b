// W3C Trace Context (https://www.w3.org/TR/trace-context/) at the edge: a request that arrives with a valid
// `traceparent` keeps its trace and sampling decision, one that arrives without (or with an invalid or
// repeated one) starts a trace, sampled at the configured share. The proxy's span is the parent it sends on.
import { randomFillSync } from 'node:crypto';

/** One request's place in a trace, as the proxy forwards it. */
export interface TraceContext {
  /** 32 lower-case hex digits. */
  traceId: string;
  /** The proxy's span: 16 lower-case hex digits. */
  spanId: string;
  /** The caller's span, when the request came with one. */
  parentSpanId: string | undefined;
  sampled: boolean;
}

/** The `traceparent` header value that carries `context` upstream (version 00). */
export function traceparentOf(context: TraceContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.sampled ? '01' : '00'}`;
}

export interface ParsedTraceparent {
  traceId: string;
  parentSpanId: string;
  sampled: boolean;
}

const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * A `traceparent` value, or undefined when it is not one a proxy may continue: ids of the wrong length or not
 * lower-case hex, all-zero ids, version ff. A later version is read by its version-00 prefix, as the
 * specification asks, when what follows the flags starts with a dash.
 */
export function parseTraceparent(value: string): ParsedTraceparent | undefined {
  if (value.length < 55) return undefined;
  const version = value.slice(0, 2);
  if (!isHex(version) || version === 'ff') return undefined;
  if (version === '00' ? value.length !== 55 : value.length > 55 && value[55] !== '-') return undefined;
  if (value[2] !== '-' || value[35] !== '-' || value[52] !== '-') return undefined;
  const traceId = value.slice(3, 35);
  const parentSpanId = value.slice(36, 52);
  const flags = value.slice(53, 55);
  if (!isHex(traceId) || !isHex(parentSpanId) || !isHex(flags)) return undefined;
  if (traceId === ZERO_TRACE || parentSpanId === ZERO_SPAN) return undefined;
  return { traceId, parentSpanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

function isHex(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

/** Random ids, drawn from the system's generator a block at a time (one call per request would cost more). */
export class TraceIds {
  private readonly block = Buffer.alloc(4096);
  private at = this.block.length;

  private hex(bytes: number): string {
    if (this.at + bytes > this.block.length) {
      randomFillSync(this.block);
      this.at = 0;
    }
    const text = this.block.toString('hex', this.at, this.at + bytes);
    this.at += bytes;
    return text;
  }

  /** 16 random bytes, never all zero. */
  traceId(): string {
    const id = this.hex(16);
    return id === ZERO_TRACE ? this.traceId() : id;
  }

  /** 8 random bytes, never all zero. */
  spanId(): string {
    const id = this.hex(8);
    return id === ZERO_SPAN ? this.spanId() : id;
  }
}

/**
 * The context for a request that carried `traceparent` values `received` (every one it sent): one valid value is
 * continued with its own sampling decision; none, several or an invalid one start a trace, sampled at `share` (0–1).
 */
export function traceContextFor(
  received: readonly string[],
  ids: TraceIds,
  share: number,
  random: () => number = Math.random,
): TraceContext {
  const parent = received.length === 1 ? parseTraceparent(received[0]!) : undefined;
  if (parent !== undefined) {
    return {
      traceId: parent.traceId,
      spanId: ids.spanId(),
      parentSpanId: parent.parentSpanId,
      sampled: parent.sampled,
    };
  }
  const sampled = share >= 1 || (share > 0 && random() < share);
  return { traceId: ids.traceId(), spanId: ids.spanId(), parentSpanId: undefined, sampled };
}

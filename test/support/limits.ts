// Proxy server limits for tests whose timeouts and header limits are not what they exercise.
import type { ProxyLimits } from '../../src/proxy/options.js';

export const TEST_LIMITS: ProxyLimits = {
  maxHeaderSize: 4096,
  maxHeadersCount: 50,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 10_000,
  requestBodyIdleTimeoutMs: 10_000,
  requestBodyBufferBytes: 64 * 1024,
  maxMirrorsInFlight: 1024,
  keepAliveTimeoutMs: 10_000,
  maxConnections: 0,
  tlsHandshakeTimeoutMs: 10_000,
  maxRequestBodyBytes: 0,
};

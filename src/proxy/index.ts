// The proxy runtime's public API, for `portico proxy` (discovery wiring) and tests.

export type { ApplyOutcome } from '../ir/apply-outcome.js';
export { redact } from '../platform/redact.js';
export { loadFleetConfigFile, runStaticProxy } from './config-file.js';
export {
  DEFAULT_PROXY_OPTIONS,
  type ProxyLimits,
  type ProxyOptions,
  type ProxyOptionsInput,
} from './options.js';
export { createProxy, type InProcessProxy, type Proxy } from './proxy.js';
export { drainOnSignal } from './signals.js';

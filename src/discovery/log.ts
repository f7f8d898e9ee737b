// How discovery reports what happens: one function, so callers can route it to any logger. Never given secrets.
export type DiscoveryLogLevel = 'debug' | 'info' | 'warn' | 'error';
export type DiscoveryLog = (level: DiscoveryLogLevel, message: string) => void;

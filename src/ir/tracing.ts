// Tracing as a fleet's proxies are told to do it: the collector and the share of new traces sampled. The
// endpoint rule is here so the translator (a DataPlaneProxy) and the proxy (its flag) refuse the same values.

/** A fleet's tracing as its DataPlaneProxy sets it; absent: off. */
export interface FleetTracing {
  /** The collector's OTLP/HTTP traces URL. */
  endpoint: string;
  /** Percent of the traces the proxy starts that are sampled; absent: 100. */
  sampling?: number;
}

/** Why `value` is not a collector URL a proxy may export to (http or https, a host, no credentials), or undefined. */
export function tracingEndpointProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `not a URL: ${JSON.stringify(value)}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `expected an http:// or https:// URL, got ${url.protocol}`;
  if (url.hostname === '') return 'the URL has no host';
  if (url.username !== '' || url.password !== '') return 'credentials do not belong in the URL';
  return undefined;
}

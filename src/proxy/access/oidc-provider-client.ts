// The proxy's client of an OpenID provider: its discovery document (fetched once, cached for an hour, a failure
// retried no sooner than a backoff allows) and its token endpoint, every call bounded in time and size.
import { backoffDelay } from '../../platform/backoff.js';

/** Largest document the provider may send (discovery, token answers). */
const MAX_DOCUMENT_BYTES = 256 * 1024;
const METADATA_TTL_MS = 3_600_000;

export interface ProviderMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  end_session_endpoint?: string;
}

export interface TokenAnswer {
  id_token?: string;
  access_token: string;
  refresh_token?: string;
  expires_in?: number;
}

/** A JSON object from `url`, or a failure saying why (never the body: it may hold tokens). */
export async function fetchJson(
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  const answer = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
  const length = Number(answer.headers.get('content-length') ?? '0');
  if (length > MAX_DOCUMENT_BYTES) throw new Error(`${url}: answer larger than ${MAX_DOCUMENT_BYTES} bytes`);
  const text = await answer.text();
  if (text.length > MAX_DOCUMENT_BYTES)
    throw new Error(`${url}: answer larger than ${MAX_DOCUMENT_BYTES} bytes`);
  if (!answer.ok) throw new Error(`${url}: HTTP ${answer.status}`);
  const value = JSON.parse(text) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${url}: not a JSON object`);
  return value as Record<string, unknown>;
}

function endpoint(document: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = document[name];
  if (typeof value === 'string' && /^https?:\/\//.test(value)) return value;
  if (required) throw new Error(`discovery document: ${name} missing or not an http(s) URL`);
  return undefined;
}

/** Checks a discovery document against the issuer it was fetched for (OpenID Connect Discovery §4.3). */
export function providerMetadata(document: Record<string, unknown>, issuer: string): ProviderMetadata {
  if (document.issuer !== issuer) throw new Error(`discovery document: issuer is not ${issuer}`);
  const metadata: ProviderMetadata = {
    issuer,
    authorization_endpoint: endpoint(document, 'authorization_endpoint', true)!,
    token_endpoint: endpoint(document, 'token_endpoint', true)!,
    jwks_uri: endpoint(document, 'jwks_uri', true)!,
  };
  const endSession = endpoint(document, 'end_session_endpoint', false);
  if (endSession !== undefined) metadata.end_session_endpoint = endSession;
  return metadata;
}

/** One provider's discovery document, cached; concurrent askers share one fetch. */
export class ProviderDiscovery {
  private cached: { metadata: ProviderMetadata; until: number } | undefined = undefined;
  private pending: Promise<ProviderMetadata> | undefined = undefined;
  private failures = 0;
  private retryAt = 0;

  constructor(
    readonly issuer: string,
    private readonly timeoutMs: number,
  ) {}

  metadata(): Promise<ProviderMetadata> {
    const now = Date.now();
    if (this.cached !== undefined && this.cached.until > now) return Promise.resolve(this.cached.metadata);
    if (this.pending !== undefined) return this.pending;
    // A provider that just failed is not asked again at once: every request would wait on it otherwise.
    if (now < this.retryAt && this.cached === undefined)
      return Promise.reject(new Error(`${this.issuer}: discovery failed recently`));
    const url = `${this.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    this.pending = fetchJson(url, {}, this.timeoutMs)
      .then((document) => {
        const metadata = providerMetadata(document, this.issuer);
        this.cached = { metadata, until: Date.now() + METADATA_TTL_MS };
        this.failures = 0;
        return metadata;
      })
      .catch((error: unknown) => {
        this.failures++;
        this.retryAt = Date.now() + backoffDelay(this.failures, { firstMs: 1_000, maxMs: 60_000 });
        // A stale document serves while the provider is away.
        if (this.cached !== undefined) return this.cached.metadata;
        throw error;
      })
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }
}

/** A token endpoint request (client_secret_basic): the code exchange or a refresh. */
export async function tokenRequest(
  tokenEndpoint: string,
  client: { id: string; secret: string },
  form: Record<string, string>,
  timeoutMs: number,
): Promise<TokenAnswer> {
  const basic = Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString(
    'base64',
  );
  const document = await fetchJson(
    tokenEndpoint,
    {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: new URLSearchParams(form).toString(),
    },
    timeoutMs,
  );
  if (typeof document.access_token !== 'string')
    throw new Error(`${tokenEndpoint}: no access_token in the answer`);
  return {
    access_token: document.access_token,
    ...(typeof document.id_token === 'string' ? { id_token: document.id_token } : {}),
    ...(typeof document.refresh_token === 'string' ? { refresh_token: document.refresh_token } : {}),
    ...(typeof document.expires_in === 'number' ? { expires_in: document.expires_in } : {}),
  };
}

// OpenID Connect login at the proxy: the authorization code flow with PKCE (RFC 7636, S256). A request without
// a session is sent to the provider (its state, nonce and code verifier sealed in a short-lived flow cookie);
// the callback checks state and nonce, exchanges the code, verifies the ID token and sets a sealed session
// cookie; expired tokens are refreshed with the refresh token; the logout path clears the session. Tokens live
// only in the sealed cookies and the upstream headers configured: never in a log line or a decision's reason.
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { OidcAuthentication } from '../../ir/oidc.js';
import { type AccessDecision, allowed, denied, headerValues } from './access-check.js';
import {
  ProviderDiscovery,
  type ProviderMetadata,
  type TokenAnswer,
  tokenRequest,
} from './oidc-provider-client.js';
import type { AccessRequest } from './request-view.js';
import { cookieKey, cookieValue, open, seal } from './sealed-cookie.js';

const FLOW_SECONDS = 600;
/** Browsers drop larger cookies; a session that does not fit is refused rather than silently lost. */
const MAX_COOKIE_BYTES = 4000;

/** The PKCE S256 challenge of a verifier. */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** A fresh random value for state, nonce and code verifier (43 base64url characters). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
  until: number;
}

interface Session {
  sub: string;
  idToken?: string;
  accessToken: string;
  refreshToken?: string;
  /** When the access token expires, ms since the epoch. */
  tokensUntil: number;
  /** When the session ends without a refresh, ms since the epoch. */
  until: number;
}

function isFlow(value: unknown): value is Flow {
  const v = value as Partial<Flow> | undefined;
  return (
    typeof v?.state === 'string' &&
    typeof v.nonce === 'string' &&
    typeof v.verifier === 'string' &&
    typeof v.returnTo === 'string' &&
    typeof v.until === 'number'
  );
}

function isSession(value: unknown): value is Session {
  const v = value as Partial<Session> | undefined;
  return (
    typeof v?.sub === 'string' &&
    typeof v.accessToken === 'string' &&
    typeof v.tokensUntil === 'number' &&
    typeof v.until === 'number'
  );
}

/** The path of a request target (before `?`). */
function pathOf(target: string): string {
  const at = target.indexOf('?');
  return at < 0 ? target : target.slice(0, at);
}

/** The Cookie header's pairs but those named `names`, joined as one header value ('' when none is left). */
export function cookiesWithout(values: readonly string[], names: readonly string[]): string {
  const kept: string[] = [];
  for (const value of values) {
    for (const pair of value.split(';')) {
      const trimmed = pair.trim();
      const eq = trimmed.indexOf('=');
      const name = eq < 0 ? trimmed : trimmed.slice(0, eq);
      if (trimmed !== '' && !names.includes(name)) kept.push(trimmed);
    }
  }
  return kept.join('; ');
}

/** One OIDC client configuration at the proxy: its provider's discovery, keys and the cookie keys. */
export class OidcAuthenticator {
  private readonly discovery: ProviderDiscovery;
  private readonly sessionKey: Buffer;
  private readonly flowKey: Buffer;
  private readonly flowCookie: string;
  private keys: { uri: string; get: JWTVerifyGetKey } | undefined = undefined;

  constructor(readonly config: OidcAuthentication) {
    this.discovery = new ProviderDiscovery(config.issuer, config.timeoutMs);
    this.sessionKey = cookieKey(config.cookieSecret, `oidc session ${config.cookieName}`);
    this.flowKey = cookieKey(config.cookieSecret, `oidc flow ${config.cookieName}`);
    this.flowCookie = `${config.cookieName}-flow`;
  }

  /** The decision for `request`; never rejects (a provider that cannot be reached refuses with 503). */
  async check(request: AccessRequest): Promise<AccessDecision> {
    try {
      const path = pathOf(request.target);
      if (path === this.callbackPath()) return await this.callback(request);
      if (path === this.config.logoutPath) return await this.logout(request);
      return await this.withSession(request);
    } catch {
      // The reason may hold provider answers: the caller logs the outcome only.
      return denied('error', 503);
    }
  }

  /** The callback's path (of an absolute redirect URI, its path). */
  private callbackPath(): string {
    const uri = this.config.redirectUri;
    return /^https?:\/\//.test(uri) ? new URL(uri).pathname : uri;
  }

  /** The redirect URI sent to the provider: as configured, or the request's scheme and host before the path. */
  private redirectUri(request: AccessRequest): string {
    const uri = this.config.redirectUri;
    return /^https?:\/\//.test(uri)
      ? uri
      : `${request.tls ? 'https' : 'http'}://${request.host ?? 'localhost'}${uri}`;
  }

  private cookieLine(request: AccessRequest, name: string, value: string, maxAge: number): string {
    const secure = (request.tls ? 'https' : 'http') === 'https' ? '; Secure' : '';
    return `${name}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`;
  }

  private cookie(request: AccessRequest, name: string): string | undefined {
    return cookieValue(headerValues(request.headerLines, 'cookie'), name);
  }

  private async withSession(request: AccessRequest): Promise<AccessDecision> {
    const sealed = this.cookie(request, this.config.cookieName);
    const session = sealed === undefined ? undefined : open(this.sessionKey, this.config.cookieName, sealed);
    const now = Date.now();
    if (isSession(session) && session.until > now) {
      if (session.tokensUntil > now) return this.pass(request, session, []);
      if (session.refreshToken !== undefined) {
        const renewed = await this.refresh(session, now).catch(() => undefined);
        if (renewed !== undefined) return this.pass(request, renewed, this.sessionCookie(request, renewed));
      }
    }
    return this.login(request);
  }

  private pass(request: AccessRequest, session: Session, responseLines: string[]): AccessDecision {
    const set: [string, string][] = [];
    if (this.config.forwardAccessToken) set.push(['authorization', `Bearer ${session.accessToken}`]);
    const header = this.config.idTokenHeader;
    if (header !== undefined && session.idToken !== undefined) set.push([header, session.idToken]);
    // The session and flow cookies are the proxy's (a bearer credential to it): the upstream never sees them.
    const others = cookiesWithout(headerValues(request.headerLines, 'cookie'), [
      this.config.cookieName,
      this.flowCookie,
    ]);
    if (others !== '') set.push(['cookie', others]);
    return allowed({ set, remove: others === '' ? ['cookie'] : [] }, responseLines);
  }

  private sessionCookie(request: AccessRequest, session: Session): string[] {
    const value = seal(this.sessionKey, this.config.cookieName, session);
    if (value.length > MAX_COOKIE_BYTES) throw new Error('the session does not fit in a cookie');
    const maxAge = Math.max(1, Math.floor((session.until - Date.now()) / 1000));
    return ['set-cookie', this.cookieLine(request, this.config.cookieName, value, maxAge)];
  }

  private async login(request: AccessRequest): Promise<AccessDecision> {
    // Only a navigation can follow a redirect to a login page; an API call is told it lacks a session.
    if (request.method !== 'GET' && request.method !== 'HEAD') return denied('login_required', 401);
    const metadata = await this.discovery.metadata();
    const flow: Flow = {
      state: randomToken(),
      nonce: randomToken(),
      verifier: randomToken(),
      returnTo: request.target,
      until: Date.now() + FLOW_SECONDS * 1000,
    };
    const location = new URL(metadata.authorization_endpoint);
    const params = location.searchParams;
    params.set('response_type', 'code');
    params.set('client_id', this.config.clientId);
    params.set('redirect_uri', this.redirectUri(request));
    params.set('scope', this.config.scopes.join(' '));
    params.set('state', flow.state);
    params.set('nonce', flow.nonce);
    params.set('code_challenge', pkceChallenge(flow.verifier));
    params.set('code_challenge_method', 'S256');
    const flowValue = seal(this.flowKey, this.flowCookie, flow);
    return denied('login_required', 302, [
      'location',
      location.toString(),
      'set-cookie',
      this.cookieLine(request, this.flowCookie, flowValue, FLOW_SECONDS),
      'cache-control',
      'no-store',
    ]);
  }

  private async callback(request: AccessRequest): Promise<AccessDecision> {
    const query = new URLSearchParams(request.target.slice(request.target.indexOf('?') + 1));
    const sealedFlow = this.cookie(request, this.flowCookie);
    const flow = sealedFlow === undefined ? undefined : open(this.flowKey, this.flowCookie, sealedFlow);
    const code = query.get('code');
    // State ties the answer to the flow this browser started (CSRF); a missing or stale flow starts over.
    if (!isFlow(flow) || flow.until < Date.now() || query.get('state') !== flow.state || code === null)
      return denied('denied', 400, ['cache-control', 'no-store']);
    const metadata = await this.discovery.metadata();
    const tokens = await tokenRequest(
      metadata.token_endpoint,
      { id: this.config.clientId, secret: this.config.clientSecret },
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: this.redirectUri(request),
        code_verifier: flow.verifier,
      },
      this.config.timeoutMs,
    );
    if (tokens.id_token === undefined) return denied('denied', 502);
    const sub = await this.verifyIdToken(metadata, tokens.id_token, flow.nonce);
    const session = this.sessionOf(sub, tokens, undefined);
    return denied('callback', 302, [
      'location',
      flow.returnTo.startsWith('/') && !flow.returnTo.startsWith('//') ? flow.returnTo : '/',
      ...this.sessionCookie(request, session),
      'set-cookie',
      this.cookieLine(request, this.flowCookie, '', 0),
      'cache-control',
      'no-store',
    ]);
  }

  private sessionOf(sub: string, tokens: TokenAnswer, previous: Session | undefined): Session {
    const now = Date.now();
    const session: Session = {
      sub,
      accessToken: tokens.access_token,
      tokensUntil: now + (tokens.expires_in ?? 300) * 1000,
      until: previous?.until ?? now + this.config.sessionSeconds * 1000,
    };
    const idToken = tokens.id_token ?? previous?.idToken;
    if (idToken !== undefined) session.idToken = idToken;
    const refreshToken = tokens.refresh_token ?? previous?.refreshToken;
    if (refreshToken !== undefined) session.refreshToken = refreshToken;
    return session;
  }

  /** The ID token's subject, after its signature, issuer, audience, lifetime and nonce are checked. */
  private async verifyIdToken(
    metadata: ProviderMetadata,
    idToken: string,
    nonce: string | undefined,
  ): Promise<string> {
    if (this.keys?.uri !== metadata.jwks_uri) {
      const get = createRemoteJWKSet(new URL(metadata.jwks_uri), {
        timeoutDuration: this.config.timeoutMs,
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
      });
      this.keys = { uri: metadata.jwks_uri, get };
    }
    const { payload } = await jwtVerify(idToken, this.keys.get, {
      issuer: this.config.issuer,
      audience: this.config.clientId,
      algorithms: ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'],
    });
    if (nonce !== undefined && payload.nonce !== nonce) throw new Error('ID token nonce mismatch');
    if (typeof payload.sub !== 'string') throw new Error('ID token without sub');
    return payload.sub;
  }

  private async refresh(session: Session, now: number): Promise<Session | undefined> {
    const metadata = await this.discovery.metadata();
    const tokens = await tokenRequest(
      metadata.token_endpoint,
      { id: this.config.clientId, secret: this.config.clientSecret },
      { grant_type: 'refresh_token', refresh_token: session.refreshToken! },
      this.config.timeoutMs,
    );
    // A refreshed ID token is checked like the first (no nonce: OpenID Connect Core §12.2).
    if (tokens.id_token !== undefined) {
      const sub = await this.verifyIdToken(metadata, tokens.id_token, undefined);
      if (sub !== session.sub) return undefined;
    }
    const renewed = this.sessionOf(session.sub, tokens, session);
    return renewed.until > now ? renewed : undefined;
  }

  private async logout(request: AccessRequest): Promise<AccessDecision> {
    const sealed = this.cookie(request, this.config.cookieName);
    const session = sealed === undefined ? undefined : open(this.sessionKey, this.config.cookieName, sealed);
    const after = this.config.postLogoutRedirectUri;
    let location = after ?? '/';
    const metadata = await this.discovery.metadata().catch(() => undefined);
    if (metadata?.end_session_endpoint !== undefined) {
      const url = new URL(metadata.end_session_endpoint);
      url.searchParams.set('client_id', this.config.clientId);
      if (isSession(session) && session.idToken !== undefined)
        url.searchParams.set('id_token_hint', session.idToken);
      if (after !== undefined) url.searchParams.set('post_logout_redirect_uri', after);
      location = url.toString();
    }
    return denied('logout', 302, [
      'location',
      location,
      'set-cookie',
      this.cookieLine(request, this.config.cookieName, '', 0),
      'cache-control',
      'no-store',
    ]);
  }
}

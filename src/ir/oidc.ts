// OpenID Connect login (authorization code flow with PKCE) as the IR carries it. The client secret and the
// cookie key come from Secrets: the config dump and logs never show them (src/platform/redact.ts).

export interface OidcAuthentication {
  /** The provider's issuer URL; its discovery document is `<issuer>/.well-known/openid-configuration`. */
  issuer: string;
  clientId: string;
  /** From a Secret; sent to the token endpoint with HTTP Basic (client_secret_basic). */
  clientSecret: string;
  /** The callback: an absolute URL, or a path the request's own scheme and host are put before. */
  redirectUri: string;
  /** A request to this path ends the session. */
  logoutPath: string;
  /** Where the client goes after logout (through the provider's end_session_endpoint when it has one). */
  postLogoutRedirectUri?: string;
  scopes: string[];
  cookieName: string;
  /** From a Secret: at least 32 bytes, base64; the session cookie's encryption key is derived from it. */
  cookieSecret: string;
  /** Header the ID token is sent upstream in; absent: not sent. */
  idTokenHeader?: string;
  /** Send the access token upstream as `authorization: Bearer …`. */
  forwardAccessToken: boolean;
  sessionSeconds: number;
  /** How long the proxy waits for the provider (discovery, token endpoint). */
  timeoutMs: number;
}

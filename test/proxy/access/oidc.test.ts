// OpenID Connect login against a real OpenID provider (oidc-provider, in process on loopback): PKCE and sealed
// cookies (unit), then the whole flow through a server that asks the authenticator first: redirect to the
// provider, its login and consent pages, the callback, the session, a refresh, a forged callback and logout.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { OidcAuthentication } from '../../../src/ir/oidc.js';
import { OidcAuthenticator, pkceChallenge } from '../../../src/proxy/access/oidc.js';
import type { AccessRequest } from '../../../src/proxy/access/request-view.js';
import { cookieKey, cookieValue, open, seal } from '../../../src/proxy/access/sealed-cookie.js';
import { Browser } from '../../support/browser.js';
import { type OpenIdProvider, startOpenIdProvider } from '../../support/openid-provider.js';

describe('PKCE and sealed cookies (unit)', () => {
  it('makes the RFC 7636 S256 challenge', () => {
    // RFC 7636 appendix B.
    assert.equal(
      pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'),
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it('opens what it sealed, and nothing altered, of another cookie or another key', () => {
    const secret = randomBytes(32).toString('base64');
    const key = cookieKey(secret, 'session');
    const sealed = seal(key, 'a', { sub: 'alice' });
    assert.deepEqual(open(key, 'a', sealed), { sub: 'alice' });
    assert.equal(open(key, 'b', sealed), undefined);
    assert.equal(open(cookieKey(secret, 'other'), 'a', sealed), undefined);
    const bytes = Buffer.from(sealed, 'base64url');
    bytes[20] = bytes[20]! ^ 1;
    assert.equal(open(key, 'a', bytes.toString('base64url')), undefined);
    assert.throws(() => cookieKey(randomBytes(16).toString('base64'), 'x'), /at least 32 bytes/);
  });

  it('finds a cookie among cookie headers', () => {
    assert.equal(cookieValue(['a=1; s=two', 'z=3'], 's'), 'two');
    assert.equal(cookieValue(['as=1'], 's'), undefined);
  });
});

/** A gateway in miniature: the authenticator decides, an allowed request is answered with the headers it would carry upstream. */
function gatewayServer(authenticator: () => OidcAuthenticator): Server {
  return createServer((req, res) => {
    const port = (req.socket.address() as AddressInfo).port;
    const request: AccessRequest = {
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      headerLines: req.rawHeaders,
      host: req.headers.host ?? `127.0.0.1:${port}`,
      clientAddress: '127.0.0.1',
      tls: false,
      path: '/',
      search: '',
      header: () => undefined,
      serverName: undefined,
      body: undefined,
    };
    void authenticator()
      .check(request)
      .then((decision) => {
        if (!decision.allowed) {
          res.writeHead(decision.status, decision.lines);
          res.end(decision.body);
          return;
        }
        const upstream = Object.fromEntries(decision.upstream.set);
        res.writeHead(200, ['content-type', 'application/json', ...decision.responseLines]);
        res.end(JSON.stringify({ path: req.url, upstream }));
      });
  });
}

describe('OIDC login against a real OpenID provider', () => {
  let provider: OpenIdProvider;
  let gateway: Server;
  let base = '';
  let authenticator: OidcAuthenticator;
  const clientSecret = randomBytes(24).toString('base64url');

  before(async () => {
    gateway = gatewayServer(() => authenticator);
    await new Promise<void>((resolve) => gateway.listen({ host: '127.0.0.1', port: 0 }, resolve));
    base = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    provider = await startOpenIdProvider(
      {
        clientId: 'portico-app',
        clientSecret,
        redirectUris: [`${base}/oauth2/callback`],
        postLogoutRedirectUris: [`${base}/bye`],
      },
      1,
    );
    const config: OidcAuthentication = {
      issuer: provider.issuer,
      clientId: 'portico-app',
      clientSecret,
      redirectUri: '/oauth2/callback',
      logoutPath: '/logout',
      postLogoutRedirectUri: `${base}/bye`,
      scopes: ['openid'],
      cookieName: 'portico-session',
      cookieSecret: randomBytes(32).toString('base64'),
      idTokenHeader: 'x-id-token',
      forwardAccessToken: true,
      sessionSeconds: 3600,
      timeoutMs: 5_000,
    };
    authenticator = new OidcAuthenticator(config);
  });
  after(async () => {
    gateway.closeAllConnections();
    await new Promise<void>((resolve) => gateway.close(() => resolve()));
    await provider.close();
  });

  it('logs in, passes tokens upstream, refreshes them, and logs out', async () => {
    const browser = new Browser();
    const loginPage = await browser.go(`${base}/dashboard?tab=1`);
    assert.match(loginPage.url, new RegExp(`^${provider.issuer}/interaction/`));
    const consentPage = await browser.submit(loginPage, { login: 'alice', password: 'any' });
    const landed = await browser.submit(consentPage);
    assert.equal(landed.status, 200, landed.body.slice(0, 300));
    assert.equal(landed.url, `${base}/dashboard?tab=1`);
    const first = JSON.parse(landed.body) as { upstream: Record<string, string> };
    assert.match(first.upstream.authorization ?? '', /^Bearer .+/);
    assert.equal((first.upstream['x-id-token'] ?? '').split('.').length, 3);
    assert.ok(browser.cookies(base).has('portico-session'));
    assert.ok(!browser.cookies(base).has('portico-session-flow'));

    // The access token lives one second: once it has expired the next request is refreshed, not sent to log in.
    const issuedAt = Date.now();
    while (Date.now() < issuedAt + 1_100) await new Promise((r) => setTimeout(r, 50));
    const refreshed = await browser.request(`${base}/dashboard`);
    assert.equal(refreshed.status, 200);
    const second = JSON.parse(refreshed.body) as { upstream: Record<string, string> };
    assert.notEqual(second.upstream.authorization, first.upstream.authorization);
    assert.ok(refreshed.headers.getSetCookie().some((line) => line.startsWith('portico-session=')));

    const logout = await browser.request(`${base}/logout`);
    assert.equal(logout.status, 302);
    const location = new URL(logout.headers.get('location') ?? '');
    assert.equal(location.origin, provider.issuer);
    assert.ok(location.searchParams.has('id_token_hint'));
    assert.ok(!browser.cookies(base).has('portico-session'));
    const after = await browser.request(`${base}/dashboard`);
    assert.equal(after.status, 302);
  });

  it('refuses a callback whose state is not the flow it started, and API calls without a session', async () => {
    const browser = new Browser();
    const start = await browser.request(`${base}/app`);
    assert.equal(start.status, 302);
    const forged = await browser.request(`${base}/oauth2/callback?code=stolen&state=wrong`);
    assert.equal(forged.status, 400);
    const api = await new Browser().request(`${base}/api`, { method: 'POST', body: '{}' });
    assert.equal(api.status, 401);
  });

  it('refuses a session cookie it did not seal', async () => {
    const browser = new Browser();
    browser
      .cookies(base)
      .set(
        'portico-session',
        seal(cookieKey(randomBytes(32).toString('base64'), 'x'), 'portico-session', { sub: 'mallory' }),
      );
    const visit = await browser.request(`${base}/dashboard`);
    assert.equal(visit.status, 302);
    assert.equal(new URL(visit.headers.get('location') ?? '').origin, provider.issuer);
  });
});

// A real OpenID provider in process: the certified `oidc-provider` library on loopback, with its development
// login and consent pages, one confidential client, PKCE required, refresh tokens and short access tokens.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface OpenIdProvider {
  issuer: string;
  server: Server;
  close(): Promise<void>;
}

export interface ProviderClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
}

export async function startOpenIdProvider(
  client: ProviderClient,
  accessTokenSeconds = 60,
): Promise<OpenIdProvider> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: client.redirectUris,
        post_logout_redirect_uris: client.postLogoutRedirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['openid-provider-test-cookie-key'] },
    pkce: { required: () => true },
    ttl: { AccessToken: accessTokenSeconds },
    issueRefreshToken: async () => true,
    findAccount: async (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: async () => ({ sub }),
    }),
  });
  server.on('request', provider.callback());
  return {
    issuer,
    server,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

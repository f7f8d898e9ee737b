// The OpenID provider of the Kubernetes tests' OIDC login (toolchain/openid-provider-image.ts puts it in an image):
// the certified `oidc-provider` library with its development login page (any user name, any password), one
// confidential client, PKCE required. Everything comes from the environment, the client secret from a Secret:
//   ISSUER (the URL both the proxy and the test's browser reach it at), PORT, CLIENT_ID, CLIENT_SECRET,
//   REDIRECT_URI, and ACCESS_TOKEN_TTL (seconds, optional: short ones test the proxy's refresh). Not for
//   production: its keys live in memory and its login page accepts anyone.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
};
const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const provider = new Provider(env('ISSUER'), {
  clients: [
    {
      client_id: env('CLIENT_ID'),
      client_secret: env('CLIENT_SECRET'),
      redirect_uris: [env('REDIRECT_URI')],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ],
  jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'cluster-test', alg: 'RS256', use: 'sig' }] },
  cookies: { keys: [randomBytes(32).toString('base64')] },
  pkce: { required: () => true },
  issueRefreshToken: async () => true,
  ...(process.env.ACCESS_TOKEN_TTL ? { ttl: { AccessToken: Number(process.env.ACCESS_TOKEN_TTL) } } : {}),
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});
const port = Number(env('PORT'));
createServer(provider.callback()).listen(port, '0.0.0.0', () => {
  console.error(`OpenID provider ${env('ISSUER')} on port ${port}`);
});
process.on('SIGTERM', () => process.exit(0));

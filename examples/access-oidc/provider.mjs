// A local OpenID provider for trying the OIDC example on one machine: the certified `oidc-provider` library (a
// dependency of this repository) on 127.0.0.1:9090, its development login page (any user name, any password),
// one client `portico-example` whose callback is http://ADDRESS:8080/oauth2/callback. It writes the Secret the
// AccessPolicy reads (a fresh client secret and cookie secret) into DIR, then serves until Ctrl-C.
//   node examples/access-oidc/provider.mjs DIR [ADDRESS [PORT]]
// ADDRESS: the fleet's address (default 127.0.1.1); PORT: the provider's (default 9090, as access.yaml says).
// Not for production: its keys live in memory and its login page accepts anyone.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const dir = process.argv[2] ?? '.';
const gateway = `http://${process.argv[3] ?? '127.0.1.1'}:8080`;
const port = Number(process.argv[4] ?? 9090);
const issuer = `http://127.0.0.1:${port}`;
const clientSecret = randomBytes(24).toString('base64url');
writeFileSync(
  join(dir, 'oidc-secret.yaml'),
  `apiVersion: v1
kind: Secret
metadata:
  name: oidc-example
  namespace: default
  labels:
    gateway.portico.io/credentials: "true"
stringData:
  client-secret: ${clientSecret}
  cookie-secret: ${randomBytes(32).toString('base64')}
`,
  { mode: 0o600 },
);
const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'portico-example',
      client_secret: clientSecret,
      redirect_uris: [`${gateway}/oauth2/callback`],
      post_logout_redirect_uris: [`${gateway}/`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ],
  jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'example', alg: 'RS256', use: 'sig' }] },
  cookies: { keys: [randomBytes(32).toString('base64')] },
  pkce: { required: () => true },
  issueRefreshToken: async () => true,
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});
const server = createServer(provider.callback());
server.listen(port, '127.0.0.1', () => {
  console.error(`wrote ${join(dir, 'oidc-secret.yaml')}; OpenID provider on ${issuer} (Ctrl-C stops it)`);
});

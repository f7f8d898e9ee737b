// Makes a signing key pair for the JWT example: writes jwks-secret.yaml (the public key set, as the Secret the
// AccessPolicy reads) into DIR and prints a token signed with the private key (valid one hour).
//   node examples/access-jwt/make-jwt.mjs DIR
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

const dir = process.argv[2] ?? '.';
const { publicKey, privateKey } = await generateKeyPair('ES256');
const jwk = { ...(await exportJWK(publicKey)), kid: 'example-1', alg: 'ES256', use: 'sig' };
writeFileSync(
  join(dir, 'jwks-secret.yaml'),
  `apiVersion: v1
kind: Secret
metadata:
  name: example-jwks
  namespace: default
  labels:
    gateway.portico.io/credentials: "true"
stringData:
  jwks.json: '${JSON.stringify({ keys: [jwk] })}'
`,
);
const token = await new SignJWT({ sub: 'alice', scope: 'read write' })
  .setProtectedHeader({ alg: 'ES256', kid: 'example-1' })
  .setIssuer('https://issuer.example')
  .setAudience('www')
  .setExpirationTime('1h')
  .sign(privateKey);
console.error(`wrote ${join(dir, 'jwks-secret.yaml')}`);
console.log(token);

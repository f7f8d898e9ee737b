// Which Gateway listener's certificate entry a name falls under: the basis of HTTP/2's 421. Listeners on one port
// may share a certificate, so the entry is compared, not the certificate.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileCertificates, createSecureContextCache, listenerHostnameOf } from '../../src/proxy/tls.js';
import { selfSigned } from '../support/certs.js';

const shared = { name: 'ns/shared', ...selfSigned('shared', ['*.example.org']) };
// The four HTTPS listeners of one port, most specific first, all with the same certificate.
const table = compileCertificates(
  {
    certificates: [
      { hostnames: ['second-example.org'], secrets: ['ns/shared'] },
      { hostnames: ['fourth-example.wildcard.org'], secrets: ['ns/shared'] },
      { hostnames: ['*.wildcard.org'], secrets: ['ns/shared'] },
      { hostnames: ['*'], secrets: ['ns/shared'] },
    ],
  },
  new Map([[shared.name, shared]]),
  createSecureContextCache(),
);

test('a name falls under the exact listener, else the longest matching wildcard, else the catch-all', () => {
  assert.equal(listenerHostnameOf(table, 'Second-Example.org'), 'second-example.org');
  assert.equal(listenerHostnameOf(table, 'fourth-example.wildcard.org'), 'fourth-example.wildcard.org');
  assert.equal(listenerHostnameOf(table, 'third-example.wildcard.org'), '*.wildcard.org');
  assert.equal(listenerHostnameOf(table, 'wildcard.org'), '*');
  assert.equal(listenerHostnameOf(table, 'example.org'), '*');
  assert.equal(listenerHostnameOf(table, 'unknown-example.org'), '*');
});

test('names under different listeners differ even though every listener has the same certificate', () => {
  const same = (sni: string, host: string) =>
    listenerHostnameOf(table, sni) === listenerHostnameOf(table, host);
  assert.equal(same('example.org', 'unknown-example.org'), true);
  assert.equal(same('example.org', 'second-example.org'), false);
  assert.equal(same('third-example.wildcard.org', 'fith-example.wildcard.org'), true);
  assert.equal(same('third-example.wildcard.org', 'fourth-example.wildcard.org'), false);
  assert.equal(same('fourth-example.wildcard.org', 'fith-example.wildcard.org'), false);
});

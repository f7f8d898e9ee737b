// Which Gateway listener's certificate entry a name falls under: the basis of HTTP/2's 421. Listeners on one port
// may share a certificate, so the entry is compared, not the certificate.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  compileCertificates,
  createSecureContextCache,
  listenerHostnameOf,
  misdirectedHost,
  selectCertificate,
} from '../../src/proxy/downstream/tls.js';
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

test('a server name in any case selects what its lower-case form selects, under a wildcard too', () => {
  const own = { name: 'ns/own', ...selfSigned('own', ['exact.example.org']) };
  const wildcard = { name: 'ns/wildcard', ...selfSigned('wildcard', ['*.wildcard.org']) };
  const mixed = compileCertificates(
    {
      certificates: [
        { hostnames: ['Exact.Example.org'], secrets: ['ns/own'] },
        { hostnames: ['*.WildCard.org'], secrets: ['ns/wildcard'] },
      ],
    },
    new Map([
      [own.name, own],
      [wildcard.name, wildcard],
    ]),
    createSecureContextCache(),
  );
  const exactContext = selectCertificate(mixed, 'exact.example.org');
  assert.equal(selectCertificate(mixed, 'EXACT.example.ORG'), exactContext);
  const wildcardContext = selectCertificate(mixed, 'a.wildcard.org');
  assert.notEqual(wildcardContext, exactContext);
  assert.equal(selectCertificate(mixed, 'A.B.WildCard.Org'), wildcardContext);
  assert.equal(listenerHostnameOf(mixed, 'A.WILDCARD.ORG'), '*.wildcard.org');
  // Two certificates: sessions must not be resumed across them; one certificate for all names: they may.
  assert.equal(mixed.resumable, false);
  assert.equal(table.resumable, true);
});

test('a Host is misdirected only when it falls under another entry than the SNI, in any case', () => {
  assert.equal(misdirectedHost(table, 'Second-Example.ORG', 'second-example.org'), false);
  assert.equal(misdirectedHost(table, 'THIRD-example.wildcard.org', 'fith-example.WILDCARD.org'), false);
  assert.equal(misdirectedHost(table, 'third-example.wildcard.org', 'Fourth-Example.Wildcard.Org'), true);
  assert.equal(misdirectedHost(table, 'second-example.org', 'unknown-example.org'), true);
  // No SNI: the client took the default certificate for whatever it asks.
  assert.equal(misdirectedHost(table, undefined, 'second-example.org'), false);
  assert.equal(misdirectedHost(table, '', 'second-example.org'), false);
});

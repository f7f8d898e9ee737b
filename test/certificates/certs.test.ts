import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import {
  fleetOfSubjectAltName,
  generateCertificates,
  issueFleetCertificate,
} from '../../src/certificates/certs.js';

test('generateCertificates: default namespace, extra DNS and IP names, validity from the issue time', () => {
  const now = new Date('2030-01-15T12:00:00Z');
  const certs = generateCertificates({
    extraSans: ['::1', '2001:db8::5', 'api.example.com'],
    now,
    leafValidityDays: 10,
  });
  const server = new X509Certificate(certs.serverCertPem);
  const sans = server.subjectAltName ?? '';
  assert.ok(sans.includes('DNS:portico-gateway.portico-gateway-system.svc.cluster.local'), sans);
  assert.ok(sans.includes('DNS:localhost') && sans.includes('IP Address:127.0.0.1'), sans);
  assert.ok(sans.includes('IP Address:0:0:0:0:0:0:0:1'), sans);
  assert.ok(sans.includes('IP Address:2001:DB8:0:0:0:0:0:5'), sans);
  assert.ok(sans.includes('DNS:api.example.com'), sans);
  assert.equal(new Date(server.validTo).toISOString(), '2030-01-25T12:00:00.000Z');
  assert.ok(new Date(server.validFrom) < now, 'backdated for clock skew');
  const ca = new X509Certificate(certs.caCertPem);
  assert.equal(new Date(ca.validTo).getUTCFullYear(), 2040);
  assert.ok(server.verify(ca.publicKey));
});

test('certificates issued from 2050 on use GeneralizedTime and still parse', () => {
  const certs = generateCertificates({ now: new Date('2049-12-31T23:30:00Z'), leafValidityDays: 1 });
  const server = new X509Certificate(certs.serverCertPem);
  assert.equal(new Date(server.validTo).toISOString(), '2050-01-01T23:30:00.000Z');
});

test('issueFleetCertificate: a client identity naming its fleet, signed by an existing CA', () => {
  const certs = generateCertificates();
  const issued = issueFleetCertificate(certs.caCertPem, certs.caKeyPem, 'default/eg');
  const cert = new X509Certificate(issued.certPem);
  const ca = new X509Certificate(certs.caCertPem);
  assert.ok(cert.checkIssued(ca), 'issuer name matches the CA subject');
  assert.ok(cert.verify(ca.publicKey));
  assert.match(cert.subject, /CN=proxy-default-eg-e41e7b31/);
  assert.equal(cert.subjectAltName, 'URI:urn:portico:fleet:default%2Feg');
  assert.equal(fleetOfSubjectAltName(cert.subjectAltName), 'default/eg');
  assert.match(cert.keyUsage?.join(',') ?? '', /1\.3\.6\.1\.5\.5\.7\.3\.2/, 'client auth only');
  assert.ok(cert.checkPrivateKey(createPrivateKey(issued.keyPem)));
  const other = new X509Certificate(
    issueFleetCertificate(certs.caCertPem, certs.caKeyPem, 'merged-eg').certPem,
  );
  assert.equal(fleetOfSubjectAltName(other.subjectAltName), 'merged-eg');
});

test('a certificate names a fleet only with exactly one fleet URI', () => {
  assert.equal(fleetOfSubjectAltName(undefined), undefined);
  assert.equal(fleetOfSubjectAltName('DNS:portico-gateway, IP Address:127.0.0.1'), undefined);
  assert.equal(
    fleetOfSubjectAltName('URI:urn:portico:fleet:a%2Fb, URI:urn:portico:fleet:c%2Fd'),
    undefined,
    'two fleets is no identity',
  );
  assert.equal(fleetOfSubjectAltName('DNS:x, URI:urn:portico:fleet:team-a%2Fweb'), 'team-a/web');
});

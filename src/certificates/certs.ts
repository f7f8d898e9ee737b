// Certificates for discovery: a CA, the controller's server certificate, and one client certificate per fleet
// (its identity: the discovery server gives a client certificate only its own fleet's config).
// Node can verify X.509 but not issue it, so certificates are built here in DER and signed with
// node:crypto (ECDSA P-256, SHA-256): no dependency, and small enough to read in one sitting.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from 'node:crypto';
import { DEFAULT_CONTROLLER_NAMESPACE } from '../api/controller-config.js';
import { fleetInfraName } from '../ir/fleet-infra.js';
import { DISCOVERY_SERVER_NAME } from '../ir/well-known.js';
import { PorticoError } from '../platform/errors.js';
import {
  bitStringBytes,
  boolean,
  explicit,
  generalName,
  namedBits,
  objectIdentifier,
  octetString,
  sequence,
  set,
  smallInteger,
  time,
  tlv,
  unsignedInteger,
  uriName,
  utf8String,
} from './der.js';
import { DEFAULT_FLEET_CERTIFICATE_LIFETIME, type Validity } from './fleet-certificate-lifetime.js';

export { DEFAULT_CONTROLLER_NAMESPACE };
/** A fleet client certificate names its fleet as this URI (subject alternative name), percent-encoded. */
export const FLEET_URI_PREFIX = 'urn:portico:fleet:';

export interface GenerateCertificatesOptions {
  /** Controller namespace, for the server certificate's in-cluster names. Default `portico-gateway-system`. */
  namespace?: string;
  /** More server names (DNS names or IP literals), e.g. a standalone loopback address. */
  extraSans?: string[];
  /** Lifetime of the CA; default 3650 days. */
  caValidityDays?: number;
  /** Lifetime of the server certificate; default 730 days. */
  leafValidityDays?: number;
  /** Issue time; default now. */
  now?: Date;
}

export interface GeneratedCertificates {
  caCertPem: string;
  caKeyPem: string;
  serverCertPem: string;
  serverKeyPem: string;
}

const OID = {
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

const KEY_USAGE_BITS = { digitalSignature: 0, keyCertSign: 5, cRLSign: 6 } as const;
const DAY_MS = 86_400_000;
// Issue slightly in the past so a peer whose clock lags a little still accepts a fresh certificate.
const BACKDATE_MS = 3_600_000;

/** The server certificate's names: the in-cluster Service names, loopback, and any extras. */
export function serverSans(namespace: string, extraSans: string[] = []): string[] {
  const names = [
    DISCOVERY_SERVER_NAME,
    `${DISCOVERY_SERVER_NAME}.${namespace}`,
    `${DISCOVERY_SERVER_NAME}.${namespace}.svc`,
    `${DISCOVERY_SERVER_NAME}.${namespace}.svc.cluster.local`,
    'localhost',
    '127.0.0.1',
    ...extraSans,
  ];
  return [...new Set(names)];
}

export function generateCertificates(options: GenerateCertificatesOptions = {}): GeneratedCertificates {
  const namespace = options.namespace ?? DEFAULT_CONTROLLER_NAMESPACE;
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const caUntil = new Date(now.getTime() + (options.caValidityDays ?? 3650) * DAY_MS);
  const leafUntil = new Date(now.getTime() + (options.leafValidityDays ?? 730) * DAY_MS);

  const ca = newKeyPair();
  const caName = distinguishedName('portico-gateway-ca');
  const caCert = issue({
    subject: caName,
    issuer: caName,
    subjectKey: ca.publicKey,
    issuerKey: ca.privateKey,
    issuerPublicKey: ca.publicKey,
    notBefore,
    notAfter: caUntil,
    isCa: true,
  });

  const server = newKeyPair();
  const serverCert = issue({
    subject: distinguishedName(DISCOVERY_SERVER_NAME),
    issuer: caName,
    subjectKey: server.publicKey,
    issuerKey: ca.privateKey,
    issuerPublicKey: ca.publicKey,
    notBefore,
    notAfter: leafUntil,
    isCa: false,
    extKeyUsage: OID.serverAuth,
    sans: serverSans(namespace, options.extraSans),
  });

  return {
    caCertPem: toPem('CERTIFICATE', caCert),
    caKeyPem: privateKeyPem(ca.privateKey),
    serverCertPem: toPem('CERTIFICATE', serverCert),
    serverKeyPem: privateKeyPem(server.privateKey),
  };
}

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
}

/**
 * The client identity of one fleet, signed by an existing CA: its fleet key as a URI name (what the discovery
 * server authorizes), its infrastructure name as the common name (what a person reads). It lives
 * `lifetimeMs` (default 7 days: the controller renews it, see fleet-certificate-lifetime.ts).
 */
export function issueFleetCertificate(
  caCertPem: string,
  caKeyPem: string,
  fleet: string,
  options: { lifetimeMs?: number; now?: Date } = {},
): IssuedCertificate {
  const caPublicKey = createPublicKey(caCertPem);
  const caPrivateKey = createPrivateKey(caKeyPem);
  const now = (options.now ?? new Date()).getTime();
  const pair = newKeyPair();
  const cert = issue({
    subject: distinguishedName(fleetInfraName(fleet)),
    issuer: subjectOf(caCertPem),
    subjectKey: pair.publicKey,
    issuerKey: caPrivateKey,
    issuerPublicKey: caPublicKey,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + (options.lifetimeMs ?? DEFAULT_FLEET_CERTIFICATE_LIFETIME.lifetimeMs)),
    isCa: false,
    extKeyUsage: OID.clientAuth,
    uris: [fleetUri(fleet)],
  });
  return { certPem: toPem('CERTIFICATE', cert), keyPem: privateKeyPem(pair.privateKey) };
}

export function fleetUri(fleet: string): string {
  return `${FLEET_URI_PREFIX}${encodeURIComponent(fleet)}`;
}

/**
 * The fleet a certificate names, from Node's `subjectaltname` text (`URI:urn:portico:fleet:default%2Feg, ...`):
 * undefined when it names none, or more than one.
 */
export function fleetOfSubjectAltName(subjectAltName: string | undefined): string | undefined {
  const fleets = (subjectAltName ?? '')
    .split(', ')
    .filter((name) => name.startsWith(`URI:${FLEET_URI_PREFIX}`))
    .map((name) => name.slice(`URI:${FLEET_URI_PREFIX}`.length));
  if (fleets.length !== 1) return undefined;
  try {
    return decodeURIComponent(fleets[0]!);
  } catch {
    return undefined;
  }
}

/** What the discovery server and the renewal read of a fleet certificate. */
export interface FleetCertificateFacts {
  /** The fleet its URI name names; undefined when it names none (or several). */
  fleet: string | undefined;
  /** SHA-256 of the DER, as Node writes `fingerprint256` (`AB:CD:…`): what a presented certificate is matched by. */
  fingerprint: string;
  validity: Validity;
}

/** Reads a PEM certificate's fleet, fingerprint and validity; throws when it is no certificate. */
export function fleetCertificateFacts(certPem: string): FleetCertificateFacts {
  const cert = new X509Certificate(certPem);
  return {
    fleet: fleetOfSubjectAltName(cert.subjectAltName),
    fingerprint: cert.fingerprint256,
    validity: { notBefore: Date.parse(cert.validFrom), notAfter: Date.parse(cert.validTo) },
  };
}

interface IssueRequest {
  subject: Buffer;
  issuer: Buffer;
  subjectKey: KeyObject;
  issuerKey: KeyObject;
  issuerPublicKey: KeyObject;
  notBefore: Date;
  notAfter: Date;
  isCa: boolean;
  extKeyUsage?: string;
  sans?: string[];
  /** Uniform resource identifier names (a fleet identity). */
  uris?: string[];
}

function issue(request: IssueRequest): Buffer {
  const spki = request.subjectKey.export({ type: 'spki', format: 'der' });
  const extensions: Buffer[] = [
    extension(OID.basicConstraints, true, request.isCa ? sequence(boolean(true)) : sequence()),
    extension(
      OID.keyUsage,
      true,
      request.isCa
        ? namedBits([KEY_USAGE_BITS.digitalSignature, KEY_USAGE_BITS.keyCertSign, KEY_USAGE_BITS.cRLSign])
        : namedBits([KEY_USAGE_BITS.digitalSignature]),
    ),
    extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier(request.subjectKey))),
    extension(OID.authorityKeyIdentifier, false, sequence(tlv(0x80, keyIdentifier(request.issuerPublicKey)))),
  ];
  if (request.extKeyUsage !== undefined) {
    extensions.push(extension(OID.extKeyUsage, false, sequence(objectIdentifier(request.extKeyUsage))));
  }
  const names = [...(request.sans ?? []).map(generalName), ...(request.uris ?? []).map(uriName)];
  if (names.length > 0) extensions.push(extension(OID.subjectAltName, false, sequence(...names)));
  const signatureAlgorithm = sequence(objectIdentifier(OID.ecdsaWithSha256));
  const tbs = sequence(
    explicit(0, smallInteger(2)),
    unsignedInteger(serialNumber()),
    signatureAlgorithm,
    request.issuer,
    sequence(time(request.notBefore), time(request.notAfter)),
    request.subject,
    spki,
    explicit(3, sequence(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: request.issuerKey, dsaEncoding: 'der' });
  return sequence(tbs, signatureAlgorithm, bitStringBytes(signature));
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? sequence(objectIdentifier(oid), boolean(true), octetString(value))
    : sequence(objectIdentifier(oid), octetString(value));
}

function distinguishedName(commonName: string): Buffer {
  return sequence(
    set(sequence(objectIdentifier(OID.organization), utf8String('portico'))),
    set(sequence(objectIdentifier(OID.commonName), utf8String(commonName))),
  );
}

/** The issuer Name for certificates signed by an existing CA: the CA's subject, byte for byte. */
function subjectOf(certPem: string): Buffer {
  const der = fromPem(certPem);
  // Certificate → tbsCertificate → [version, serial, signature, issuer, validity, subject, ...]
  const tbs = children(der)[0];
  const subject = tbs === undefined ? undefined : children(tbs)[5];
  if (subject === undefined)
    throw new PorticoError('E_CERTIFICATE', 'CA certificate: cannot read its subject');
  return subject;
}

/** The complete child elements of a constructed DER element. */
function children(element: Buffer): Buffer[] {
  const out: Buffer[] = [];
  const { headerLength, length } = readHeader(element, 0);
  let offset = headerLength;
  const end = headerLength + length;
  while (offset < end) {
    const child = readHeader(element, offset);
    out.push(element.subarray(offset, offset + child.headerLength + child.length));
    offset += child.headerLength + child.length;
  }
  return out;
}

function readHeader(buffer: Buffer, offset: number): { headerLength: number; length: number } {
  const first = buffer[offset + 1] ?? 0;
  if (first < 0x80) return { headerLength: 2, length: first };
  const count = first & 0x7f;
  let length = 0;
  for (let i = 0; i < count; i++) length = length * 256 + (buffer[offset + 2 + i] ?? 0);
  return { headerLength: 2 + count, length };
}

function keyIdentifier(publicKey: KeyObject): Buffer {
  // RFC 5280 §4.2.1.2 allows any method that yields unique values; a truncated SHA-256 of the SPKI is one.
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest()
    .subarray(0, 20);
}

function serialNumber(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x40; // positive, and a non-zero first byte keeps all 16 bytes
  return bytes;
}

function newKeyPair(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

function privateKeyPem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function fromPem(pem: string): Buffer {
  const body = pem.replace(/-----(BEGIN|END) [A-Z ]+-----/g, '').replace(/\s+/g, '');
  return Buffer.from(body, 'base64');
}

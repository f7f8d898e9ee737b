// The cluster's certificates, made with the openssl CLI: one CA, the API server's serving certificate, a client
// certificate per component (its user and groups are what RBAC and the Node authorizer see), the kubelet's
// serving certificate and the service account signing key. EC P-256 throughout: fast to generate.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Identity {
  cert: string;
  key: string;
}

export interface ClusterPki {
  dir: string;
  caCert: string;
  caKey: string;
  apiserver: Identity;
  kubeletServing: Identity;
  saKey: string;
  saPub: string;
  /** Client identities by name: admin, controller-manager, scheduler, kubelet, kube-proxy, apiserver-kubelet. */
  clients: Record<string, Identity>;
}

export interface PkiOptions {
  dir: string;
  nodeName: string;
  nodeIp: string;
  apiServerIps: string[];
}

function openssl(args: string[], input?: string): string {
  return execFileSync('openssl', args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
}

function newKey(path: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path]);
}

interface CertRequest {
  name: string;
  subject: string;
  usage: 'server' | 'client' | 'both';
  sans?: string[];
}

function sign(dir: string, ca: Identity, req: CertRequest): Identity {
  const key = join(dir, `${req.name}.key`);
  const cert = join(dir, `${req.name}.crt`);
  const ext = join(dir, `${req.name}.ext`);
  newKey(key);
  const usages = { server: 'serverAuth', client: 'clientAuth', both: 'serverAuth,clientAuth' }[req.usage];
  const lines = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${usages}`,
  ];
  if (req.sans !== undefined && req.sans.length > 0) lines.push(`subjectAltName=${req.sans.join(',')}`);
  writeFileSync(ext, `${lines.join('\n')}\n`);
  const csr = openssl(['req', '-new', '-key', key, '-subj', req.subject]);
  openssl(
    [
      'x509',
      '-req',
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      '30',
      '-extfile',
      ext,
      '-out',
      cert,
    ],
    csr,
  );
  return { cert, key };
}

export function createPki(options: PkiOptions): ClusterPki {
  const dir = options.dir;
  mkdirSync(dir, { recursive: true });
  const ca: Identity = { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  newKey(ca.key);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    ca.key,
    '-subj',
    '/CN=portico-test-cluster-ca',
    '-days',
    '30',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out',
    ca.cert,
  ]);
  const apiserver = sign(dir, ca, {
    name: 'apiserver',
    subject: '/CN=kube-apiserver',
    usage: 'server',
    sans: [
      ...options.apiServerIps.map((ip) => `IP:${ip}`),
      'DNS:localhost',
      'DNS:kubernetes',
      'DNS:kubernetes.default',
      'DNS:kubernetes.default.svc',
      'DNS:kubernetes.default.svc.cluster.local',
    ],
  });
  const kubeletServing = sign(dir, ca, {
    name: 'kubelet-serving',
    subject: `/CN=${options.nodeName}`,
    usage: 'server',
    sans: [`IP:${options.nodeIp}`, `DNS:${options.nodeName}`],
  });
  const clients: Record<string, Identity> = {
    admin: sign(dir, ca, {
      name: 'admin',
      subject: '/O=system:masters/CN=portico-test-admin',
      usage: 'client',
    }),
    'controller-manager': sign(dir, ca, {
      name: 'controller-manager',
      subject: '/CN=system:kube-controller-manager',
      usage: 'client',
    }),
    scheduler: sign(dir, ca, { name: 'scheduler', subject: '/CN=system:kube-scheduler', usage: 'client' }),
    kubelet: sign(dir, ca, {
      name: 'kubelet',
      subject: `/O=system:nodes/CN=system:node:${options.nodeName}`,
      usage: 'client',
    }),
    'kube-proxy': sign(dir, ca, { name: 'kube-proxy', subject: '/CN=system:kube-proxy', usage: 'client' }),
    'apiserver-kubelet': sign(dir, ca, {
      name: 'apiserver-kubelet',
      subject: '/O=system:masters/CN=kube-apiserver-kubelet-client',
      usage: 'client',
    }),
  };
  const saKey = join(dir, 'sa.key');
  const saPub = join(dir, 'sa.pub');
  newKey(saKey);
  openssl(['pkey', '-in', saKey, '-pubout', '-out', saPub]);
  return { dir, caCert: ca.cert, caKey: ca.key, apiserver, kubeletServing, saKey, saPub, clients };
}

/** A kubeconfig with the CA and the client identity embedded, so it can be copied anywhere. */
export function writeKubeconfig(
  path: string,
  server: string,
  caCert: string,
  client: Identity,
  user: string,
): void {
  const b64 = (file: string) => readFileSync(file).toString('base64');
  const text = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: portico-test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caCert)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(client.cert)}`,
    `    client-key-data: ${b64(client.key)}`,
    'contexts:',
    '- name: portico-test',
    '  context:',
    '    cluster: portico-test',
    `    user: ${user}`,
    'current-context: portico-test',
    '',
  ].join('\n');
  writeFileSync(path, text, { mode: 0o600 });
}

// Preloaded into every pod process (NODE_OPTIONS=--import): emulates the pod network namespace.
// - Service DNS names resolve from the hosts file the agent keeps current, with the pod's search list.
// - The pod's own loopback and wildcard binds map onto the pod IP, so pods don't fight over ports.
// - The process exits when the simulator that started it is gone.
import dns from 'node:dns';
import { readFileSync, statSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import { promisify } from 'node:util';

const hostsFile = process.env.PORTICO_SIM_HOSTS ?? '';
const podIP = process.env.POD_IP ?? '';
const podNamespace = process.env.PORTICO_SIM_POD_NAMESPACE ?? 'default';
const LOCAL = new Set(['127.0.0.1', 'localhost', '::1', '0.0.0.0', '::', '']);

let cache = { version: '', hosts: {} };
function hosts() {
  try {
    const st = statSync(hostsFile);
    const version = `${st.ino}:${st.mtimeMs}:${st.size}`;
    if (version !== cache.version) cache = { version, hosts: JSON.parse(readFileSync(hostsFile, 'utf8')) };
  } catch {
    // No hosts file yet: nothing resolves through it.
  }
  return cache.hosts;
}

function clusterAddress(hostname) {
  const name = String(hostname).toLowerCase().replace(/\.$/, '');
  if (podIP !== '' && name === 'localhost') return podIP;
  const h = hosts();
  const search = [`${podNamespace}.svc.cluster.local`, 'svc.cluster.local', 'cluster.local'];
  for (const candidate of [name, ...search.map((s) => `${name}.${s}`)]) if (h[candidate]) return h[candidate];
  return undefined;
}

const originalLookup = dns.lookup;
dns.lookup = function lookup(hostname, options, callback) {
  const cb = typeof options === 'function' ? options : callback;
  const opts = typeof options === 'object' && options !== null ? options : {};
  const address = clusterAddress(hostname);
  if (address === undefined) return originalLookup.call(dns, hostname, options, callback);
  process.nextTick(() => (opts.all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4)));
  return {};
};
const originalPromisesLookup = dns.promises.lookup;
dns.promises.lookup = async function lookup(hostname, options) {
  const address = clusterAddress(hostname);
  if (address === undefined) return originalPromisesLookup.call(dns.promises, hostname, options);
  return typeof options === 'object' && options?.all ? [{ address, family: 4 }] : { address, family: 4 };
};
// util.promisify(dns.lookup) must still resolve to { address, family }, as for the built-in lookup.
dns.lookup[promisify.custom] = dns.promises.lookup;

// Cluster names have no TXT/SRV records here: answer at once instead of asking the host's DNS servers.
function noData(hostname) {
  return Object.assign(new Error(`queryTxt ENODATA ${hostname}`), { code: 'ENODATA', hostname });
}
const originalResolveTxt = dns.promises.resolveTxt;
dns.promises.resolveTxt = async function resolveTxt(hostname) {
  if (clusterAddress(hostname) !== undefined) throw noData(hostname);
  return originalResolveTxt.call(dns.promises, hostname);
};

if (podIP !== '') {
  const originalListen = net.Server.prototype.listen;
  net.Server.prototype.listen = function listen(...args) {
    const [first, second] = args;
    if (typeof first === 'object' && first !== null && first.path === undefined && first.fd === undefined) {
      if (LOCAL.has(first.host ?? '')) args[0] = { ...first, host: podIP };
    } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
      if (typeof second === 'string') {
        if (LOCAL.has(second)) args[1] = podIP;
      } else {
        args.splice(1, 0, podIP);
      }
    }
    return originalListen.apply(this, args);
  };
  const originalConnect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function connect(...args) {
    const [first] = args;
    const target = Array.isArray(first) ? first[0] : first;
    if (
      typeof target === 'object' &&
      target !== null &&
      target.path === undefined &&
      LOCAL.has(target.host ?? '')
    ) {
      const patched = { ...target, host: podIP };
      // net.createConnection passes a normalized [options, cb] array tagged with a symbol: keep that array.
      if (Array.isArray(first)) first[0] = patched;
      else args[0] = patched;
    } else if (typeof first === 'number' && (typeof args[1] !== 'string' || LOCAL.has(args[1]))) {
      if (typeof args[1] === 'string') args[1] = podIP;
      else args.splice(1, 0, podIP);
    }
    return originalConnect.apply(this, args);
  };
}
syncBuiltinESMExports();

// A pod never outlives its node: when the simulator dies, its pod processes exit too.
if (process.env.PORTICO_SIM_AGENT_PID !== undefined) {
  const agent = Number(process.env.PORTICO_SIM_AGENT_PID);
  setInterval(() => {
    if (process.ppid !== agent) process.exit(137);
  }, 500).unref();
}

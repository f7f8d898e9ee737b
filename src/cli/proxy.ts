// `portico proxy`: one data-plane process — a discovery client feeding the proxy runtime.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { type DiscoveryClientOptions, startDiscoveryClient } from '../discovery/client.js';
import { proxySettingsOfFlags, PROXY_SETTING_FLAGS as SETTING_FLAGS } from '../ir/proxy-flags.js';
import { MAX_PROXY_WORKERS } from '../ir/proxy-settings.js';
import { PORTS } from '../ir/well-known.js';
import { PorticoError } from '../platform/errors.js';
import { formatHostPort, parseHostPort } from '../platform/host-port.js';
import { requireLoopback } from '../platform/listen-scope.js';
import { createLogger, type LogLevel, logSink } from '../platform/log-line.js';
import { runStaticProxy } from '../proxy/index.js';
import { runtimeSettings } from '../proxy/live-settings.js';
import { drainOnSignal } from '../proxy/signals.js';
import { defaultWorkerCount } from '../proxy/workers/cpu-count.js';
import { createProxyWithWorkers, type WorkerProxyOptions } from '../proxy/workers/pool.js';
import { appendStageTrace, type StageTrace, traceEventsFile } from '../trace/propagation-trace.js';
import { LOG_FORMAT_HELP, LOG_LEVEL_HELP, logFormatOption } from './log-level-option.js';
import { ACCESS_LOG_FLAGS_HELP, TRACING_FLAGS_HELP } from './telemetry-options.js';

const LOOPBACK = '127.0.0.1';

export const HELP = `usage: portico proxy --discovery HOST:PORT --fleet KEY --node ID --ca-file FILE [options]
       portico proxy --config-file FILE [options]

  --discovery HOST:PORT     discovery server (always TLS 1.3)
  --fleet KEY               fleet key: <namespace>/<gateway> or <gatewayclass> when merged
  --node ID                 this proxy's id (default: the host name)
  --ca-file FILE            CA that signed the discovery server certificate
  --cert-file FILE          client certificate (mutual TLS mode), with --key-file
  --key-file FILE           client key (mutual TLS mode)
  --token-file FILE         bearer token, re-read on every reconnect (token mode)
  --server-name NAME        TLS server name to verify (default: the discovery host)
  --bind-address ADDR       address listeners bind (default 0.0.0.0)
  --port-offset N           listener ports below 1024 bind at port+N (default 0)
  --admin-address ADDR      admin API (default ${LOOPBACK}:${PORTS.proxyAdmin}; "off" disables); loopback only unless
                            --allow-remote-admin (it can drain the proxy and has no authentication)
  --metrics-address ADDR    Prometheus metrics (default ${LOOPBACK}:${PORTS.metrics}; "off" disables)
  --ready-address ADDR      GET /ready and /live (default ${LOOPBACK}:${PORTS.proxyReady}; "off" disables)
  --drain-seconds N         keep serving after SIGTERM before closing idle connections (default 5)
  --max-drain-seconds N     longest wait for requests in flight (default 60)
  --config-file FILE        serve this fleet config (JSON or YAML) instead of asking discovery
  --workers N               processes serving the listeners (default: the CPUs this container may use —
                            its cgroup CPU quota, else its affinity mask); 1 serves in this process
  --max-workers N           the most workers a settings change (PUT /settings) may ask for (default 1024)
  --layer4-relay KIND       what moves TCP and TLS listeners' bytes: native (a relay thread per process, the
                            default; Node's sockets where it cannot load) or node (Node's sockets)
${LOG_LEVEL_HELP}
${LOG_FORMAT_HELP}
${ACCESS_LOG_FLAGS_HELP}
${TRACING_FLAGS_HELP}

diagnostics:
  --trace-events FILE       append a timestamped line to FILE as each config arrives, is applied and swapped in
                            (default: $PORTICO_TRACE_EVENTS; absent: off)

Exits 98 when its admin, metrics or ready address is in use (a supervisor then moves it elsewhere).`;

async function readRequired(path: string | undefined, option: string): Promise<string | undefined> {
  if (path === undefined) return undefined;
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new PorticoError('E_IO', `${option}: cannot read ${path}: ${(error as Error).message}`);
  }
}

function wholeWorkers(value: string, option: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PROXY_WORKERS)
    throw new PorticoError(
      'E_USAGE',
      `${option}: expected a whole number from 1 to ${MAX_PROXY_WORKERS}, got '${value}'`,
    );
  return n;
}

const OPTIONS = {
  discovery: { type: 'string' },
  fleet: { type: 'string' },
  node: { type: 'string' },
  'ca-file': { type: 'string' },
  'cert-file': { type: 'string' },
  'key-file': { type: 'string' },
  'token-file': { type: 'string' },
  'server-name': { type: 'string' },
  'bind-address': { type: 'string', default: '0.0.0.0' },
  'port-offset': { type: 'string', default: '0' },
  'admin-address': { type: 'string', default: `${LOOPBACK}:${PORTS.proxyAdmin}` },
  'allow-remote-admin': { type: 'boolean', default: false },
  'metrics-address': { type: 'string', default: `${LOOPBACK}:${PORTS.metrics}` },
  'ready-address': { type: 'string', default: `${LOOPBACK}:${PORTS.proxyReady}` },
  // The settings flags: names and defaults from the table their writers use (ir/proxy-flags.ts).
  'drain-seconds': { type: 'string', default: SETTING_FLAGS['drain-seconds'].default },
  'max-drain-seconds': { type: 'string', default: SETTING_FLAGS['max-drain-seconds'].default },
  'config-file': { type: 'string' },
  workers: { type: 'string' },
  'max-workers': { type: 'string', default: String(MAX_PROXY_WORKERS) },
  'layer4-relay': { type: 'string', default: 'native' },
  'access-log': { type: 'string', default: SETTING_FLAGS['access-log'].default },
  'access-log-fields': { type: 'string' },
  'access-log-sampling': { type: 'string', default: SETTING_FLAGS['access-log-sampling'].default },
  'access-log-redact-query': { type: 'string' },
  'tracing-endpoint': { type: 'string' },
  'tracing-sampling': { type: 'string', default: SETTING_FLAGS['tracing-sampling'].default },
  'trace-events': { type: 'string' },
  'log-level': { type: 'string', default: SETTING_FLAGS['log-level'].default },
  'log-format': { type: 'string', default: 'text' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ProxyArgs = ReturnType<typeof parseProxyArgs>;

function parseProxyArgs(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS }).values;
}

/** A side server's address, or undefined for "off"; parsed here only to fail early with the option's name. */
function sideAddress(value: string, option: string): string | undefined {
  if (value === 'off') return undefined;
  parseHostPort(value, option);
  return value;
}

/** The runtime's options `portico proxy` takes from `argv` (what a supervisor's or renderer's flags start). */
export function proxyRuntimeOptions(argv: string[]): WorkerProxyOptions & { logLevel: LogLevel } {
  return runtimeOptions(parseProxyArgs(argv));
}

/** The proxy runtime's options, whatever feeds it its config. */
function runtimeOptions(values: ProxyArgs): WorkerProxyOptions & { logLevel: LogLevel } {
  const portOffset = Number(values['port-offset']);
  if (!Number.isInteger(portOffset) || portOffset < 0 || portOffset > 64511) {
    throw new PorticoError(
      'E_USAGE',
      `--port-offset: expected a whole number, got '${values['port-offset']}'`,
    );
  }
  if (values['admin-address'] !== 'off') {
    requireLoopback(
      parseHostPort(values['admin-address'], '--admin-address'),
      '--admin-address',
      'the admin API can drain this proxy and has no authentication',
      '--allow-remote-admin',
      values['allow-remote-admin'],
    );
  }
  const relay = values['layer4-relay'];
  if (relay !== 'native' && relay !== 'node')
    throw new PorticoError('E_USAGE', `--layer4-relay: expected native or node, got '${relay}'`);
  // Every settings flag read through the table that writes it, so a supervisor's flags come back as its settings.
  const settings = runtimeSettings(proxySettingsOfFlags(values, defaultWorkerCount));
  return {
    bindAddress: values['bind-address'],
    portOffset,
    adminAddress: sideAddress(values['admin-address'], '--admin-address'),
    metricsAddress: sideAddress(values['metrics-address'], '--metrics-address'),
    readyAddress: sideAddress(values['ready-address'], '--ready-address'),
    logLevel: settings.logLevel,
    drainMs: settings.drainMs,
    maxDrainMs: settings.maxDrainMs,
    workers: settings.workers,
    maxWorkers: wholeWorkers(values['max-workers'], '--max-workers'),
    layer4Relay: relay,
    accessLog: settings.accessLog,
    tracing: settings.tracing,
    ...traceEvents(values['trace-events']),
  };
}

/** The in-process hook, and the file for worker processes (a hook cannot cross into them). */
function traceEvents(flag: string | undefined): { trace?: StageTrace; traceEvents?: string } {
  const file = traceEventsFile(flag);
  return file === undefined ? {} : { trace: appendStageTrace(file), traceEvents: file };
}

/** How to reach and prove itself to the discovery server: the options checked, the CA and credentials read. */
async function discoverySettings(values: ProxyArgs): Promise<Omit<DiscoveryClientOptions, 'apply' | 'log'>> {
  const caFile = values['ca-file'];
  if (values.discovery === undefined || values.fleet === undefined || caFile === undefined) {
    throw new PorticoError('E_USAGE', `--discovery, --fleet and --ca-file are required\n\n${HELP}`);
  }
  const certFile = values['cert-file'];
  const keyFile = values['key-file'];
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new PorticoError('E_USAGE', '--cert-file and --key-file go together');
  }
  if (certFile === undefined && values['token-file'] === undefined) {
    throw new PorticoError(
      'E_USAGE',
      'one of --cert-file/--key-file (mutual TLS) or --token-file (token) is required',
    );
  }
  const discovery = parseHostPort(values.discovery, '--discovery');
  const caPem = (await readRequired(caFile, '--ca-file'))!;
  const certPem = await readRequired(certFile, '--cert-file');
  const keyPem = await readRequired(keyFile, '--key-file');
  const tokenFile = values['token-file'];
  return {
    address: formatHostPort(discovery),
    fleet: values.fleet,
    node: values.node ?? hostname(),
    tls: { caPem, certPem, keyPem, serverName: values['server-name'] },
    // Certificates rotate on disk too (a Secret's new content, or certgen --rotate): each new channel reads them.
    reloadTls: () => ({
      caPem: readFileSync(caFile, 'utf8'),
      ...(certFile === undefined ? {} : { certPem: readFileSync(certFile, 'utf8') }),
      ...(keyFile === undefined ? {} : { keyPem: readFileSync(keyFile, 'utf8') }),
    }),
    // Projected tokens rotate on disk: read the file anew for every connection.
    token: tokenFile === undefined ? undefined : async () => (await readFile(tokenFile, 'utf8')).trim(),
  };
}

export async function run(argv: string[]): Promise<number> {
  const values = parseProxyArgs(argv);
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const options = runtimeOptions(values);
  // At info, discovery's debug lines (deltas waiting for a whole update) are not shown.
  const log = createLogger(
    options.logLevel,
    logSink(logFormatOption(values['log-format']), (line) => process.stderr.write(`${line}\n`)),
  );
  const runtime = { ...options, log, setLogLevel: (level: LogLevel) => log.setLevel(level) };
  if (values['config-file'] !== undefined) return runStaticProxy(values['config-file'], runtime);
  const settings = await discoverySettings(values);

  // A draining proxy stops claiming its fleet's config, so the controller sees it no longer serves.
  let stopDiscovery: () => Promise<void> = async () => {};
  const proxy = createProxyWithWorkers({ ...runtime, onDraining: () => void stopDiscovery() });
  await proxy.started;
  const client = startDiscoveryClient({
    ...settings,
    apply: (config, version, change) => proxy.apply(config, version, change),
    trace: runtime.trace,
    log,
  });
  // A controller that adopts this proxy after a restart asks it to reconnect without waiting out the backoff.
  process.on('SIGHUP', () => client.reconnectNow());
  let stopping: Promise<void> | undefined;
  stopDiscovery = () => {
    stopping ??= client.stop();
    return stopping;
  };
  log.info(`proxy ${settings.node} of fleet ${settings.fleet}: discovery ${values.discovery}`);

  await drainOnSignal(proxy, () => log.info('draining'));
  await stopDiscovery();
  exitOnceStopped(0);
  return 0;
}

/** How long a stopped proxy lets anything still open end by itself before it exits anyway. */
const EXIT_AFTER_STOP_MS = 1000;

/**
 * The proxy drained and closed everything it owns: it exits even if a library did not. A connection attempt grpc-js
 * abandons with its channel (a SYN to a controller pod that went away, which nobody answers) keeps its socket until
 * the kernel gives the SYN up, minutes later; a pod would sit out its termination grace period and be killed.
 */
function exitOnceStopped(code: number): void {
  // Unref'd: when nothing is left open the process ends on its own first.
  setTimeout(() => process.exit(code), EXIT_AFTER_STOP_MS).unref();
}

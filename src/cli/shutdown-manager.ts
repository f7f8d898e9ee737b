// `portico shutdown-manager`: the sidecar that keeps a proxy pod's shutdown graceful (see proxy-cli.md).
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { PORTS } from '../ir/well-known.js';
import { PorticoError } from '../platform/errors.js';
import { parseHostPort } from '../platform/host-port.js';
import { createLogger, type Logger, logSink } from '../platform/log-line.js';
import { drainProxy } from '../shutdown/drain-client.js';
import { LOG_FORMAT_HELP, LOG_LEVEL_HELP, logFormatOption, logLevelOption } from './log-level-option.js';
import { serveUntilSignal } from './serve-until-signal.js';

const LISTEN = `0.0.0.0:${PORTS.shutdownManager}`;
const PROXY_ADMIN = `127.0.0.1:${PORTS.proxyAdmin}`;

export const HELP = `usage: portico shutdown-manager [--listen ${LISTEN}] [--proxy-admin ${PROXY_ADMIN}] [log options]
       portico shutdown-manager drain [--proxy-admin ${PROXY_ADMIN}] [--timeout-seconds 60] [log options]

Without a subcommand: serves GET /healthz until SIGTERM.
drain: asks the proxy to drain (POST /drain on its admin address) and returns once it reports no
requests in flight, or after the timeout. Meant for the preStop hook of the proxy pod's containers.

log options (lines go to stderr):
${LOG_LEVEL_HELP}
${LOG_FORMAT_HELP}`;

async function serve(listen: string, log: Logger): Promise<number> {
  const { host, port } = parseHostPort(listen, '--listen');
  const server = createServer((req, res) => {
    const ok = req.method === 'GET' && (req.url ?? '').split('?')[0] === '/healthz';
    res.writeHead(ok ? 200 : 404, { 'content-type': 'text/plain' });
    res.end(ok ? 'ok\n' : 'not found\n');
  });
  await serveUntilSignal(server, { host, port }, `--listen ${listen}`, () =>
    log.info(`shutdown-manager listening on ${listen}`),
  );
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      listen: { type: 'string', default: LISTEN },
      'proxy-admin': { type: 'string', default: PROXY_ADMIN },
      'timeout-seconds': { type: 'string', default: '60' },
      'log-level': { type: 'string', default: 'info' },
      'log-format': { type: 'string', default: 'text' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    console.log(HELP);
    return 0;
  }
  const [sub, ...extra] = positionals;
  if (extra.length > 0 || (sub !== undefined && sub !== 'drain')) {
    throw new PorticoError('E_USAGE', `shutdown-manager: unexpected argument '${extra[0] ?? sub}'`);
  }
  const log = createLogger(
    logLevelOption(values['log-level']),
    logSink(logFormatOption(values['log-format']), (line) => process.stderr.write(`${line}\n`)),
  );
  if (sub === undefined) return serve(values.listen, log);
  const seconds = Number(values['timeout-seconds']);
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new PorticoError(
      'E_USAGE',
      `--timeout-seconds: '${values['timeout-seconds']}' is not a number of seconds`,
    );
  }
  parseHostPort(values['proxy-admin'], '--proxy-admin');
  const result = await drainProxy(values['proxy-admin'], seconds * 1000);
  const why = result.error === undefined ? '' : `: ${result.error}`;
  const line = `shutdown-manager drain: ${result.outcome}${why} (requests in flight: ${result.inFlight})`;
  // Anything but a drained proxy is worth a look: the pod may have cut requests off.
  if (result.outcome === 'drained') log.info(line);
  else log.warn(line);
  return 0;
}

// `portico echo [--port N] [--host ADDR]`: the test backend (JSON echo of the request, WebSocket echo).

import { parseArgs } from 'node:util';
import { createEchoServer, identityFromEnv } from '../echo/server.js';
import { PorticoError } from '../platform/errors.js';
import { createLogger, logSink } from '../platform/log-line.js';
import { LOG_FORMAT_HELP, LOG_LEVEL_HELP, logFormatOption, logLevelOption } from './log-level-option.js';
import { serveUntilSignal } from './serve-until-signal.js';

export const HELP = `usage: portico echo [--port N] [--host ADDR] [--log-level LEVEL] [--log-format FORMAT]

Replies to every request with JSON: path, host, method, proto, headers (name -> list of values),
namespace, ingress, service, pod (from NAMESPACE, INGRESS_NAME, SERVICE_NAME, POD_NAME).
  /status/NNN             reply with status NNN
  ?delay=250ms|1s         wait before replying
  X-Echo-Set-Header: A:1,B:2   add response headers
WebSocket upgrades are accepted and every frame is echoed back.

options:
  --port N      port to listen on (default: HTTP_PORT env, else 3000; 0 picks a free port)
  --host ADDR   address to listen on (default 0.0.0.0)
${LOG_LEVEL_HELP}
${LOG_FORMAT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      'log-format': { type: 'string', default: 'text' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    console.log(HELP);
    return 0;
  }
  const rawPort = values.port ?? process.env.HTTP_PORT ?? '3000';
  const port = Number(rawPort);
  if (!/^\d+$/.test(rawPort) || port > 65535)
    throw new PorticoError('E_USAGE', `--port: '${rawPort}' is not a port`);
  const log = createLogger(
    logLevelOption(values['log-level']),
    logSink(logFormatOption(values['log-format'])),
  );
  const server = createEchoServer(identityFromEnv(process.env));
  await serveUntilSignal(server, { host: values.host ?? '0.0.0.0', port }, 'echo', (address) =>
    log.info(`echo listening on ${address.address}:${address.port}`),
  );
  return 0;
}

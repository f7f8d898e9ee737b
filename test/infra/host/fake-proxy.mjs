// Stands in for `portico proxy` in supervisor tests: listens (on --port, default any), logs on both streams,
// crashes on request (GET /crash, or --crash-after-ms), answers GET /live with 200 until GET /break, drains on
// SIGTERM (or ignores it with --ignore-sigterm), says it reconnects on SIGHUP, takes new settings
// (PUT /settings, shown by GET /settings; refused with 409 under --refuse-settings).
import { createServer } from 'node:http';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const fleet = option('--fleet') ?? '?';

let broken = false;
let settings = null;
const server = createServer((request, response) => {
  if (request.method === 'PUT' && request.url === '/settings') {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      if (args.includes('--refuse-settings')) {
        response.statusCode = 409;
        response.end(JSON.stringify({ error: 'refused by --refuse-settings' }));
        return;
      }
      settings = JSON.parse(body);
      response.end(JSON.stringify({ applied: true }));
    });
    return;
  }
  if (request.url === '/settings') {
    response.end(JSON.stringify(settings));
    return;
  }
  if (request.url === '/live') {
    response.statusCode = broken ? 503 : 200;
    response.end(broken ? 'not live: broken' : 'live');
    return;
  }
  if (request.url === '/break') {
    broken = true;
    response.end('broken');
    return;
  }
  if (request.url === '/crash') {
    response.end('bye');
    setImmediate(() => process.exit(3));
    return;
  }
  // As `portico proxy` does: its own log on stderr, one access log line per request on stdout.
  console.log(`access ${request.url}`);
  response.end(JSON.stringify({ fleet, pid: process.pid, args }));
});
server.listen(Number(option('--port') ?? 0), '127.0.0.1', () => {
  console.error(`listening on ${server.address().port} as ${process.pid}`);
  console.error(`fleet ${fleet} warming up`);
});

const crashAfter = option('--crash-after-ms');
if (crashAfter !== undefined) setTimeout(() => process.exit(7), Number(crashAfter));

// As `portico proxy` does: reconnect to discovery at once (here: just say so).
process.on('SIGHUP', () => console.error('SIGHUP: reconnecting'));

process.on('SIGTERM', () => {
  if (args.includes('--ignore-sigterm')) {
    console.error('ignoring SIGTERM');
    return;
  }
  console.error('draining');
  server.close();
  setTimeout(() => process.exit(0), 50);
});

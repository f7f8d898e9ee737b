// Stands in for `portico proxy` in supervisor tests: listens, logs on both streams, crashes on request
// (GET /crash, or --crash-after-ms), drains on SIGTERM (or ignores it with --ignore-sigterm).
import { createServer } from 'node:http';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const fleet = option('--fleet') ?? '?';

const server = createServer((request, response) => {
  if (request.url === '/crash') {
    response.end('bye');
    setImmediate(() => process.exit(3));
    return;
  }
  response.end(JSON.stringify({ fleet, pid: process.pid, args }));
});
server.listen(0, '127.0.0.1', () => {
  console.log(`listening on ${server.address().port} as ${process.pid}`);
  console.error(`fleet ${fleet} warming up`);
});

const crashAfter = option('--crash-after-ms');
if (crashAfter !== undefined) setTimeout(() => process.exit(7), Number(crashAfter));

process.on('SIGTERM', () => {
  if (args.includes('--ignore-sigterm')) {
    console.log('ignoring SIGTERM');
    return;
  }
  console.log('draining');
  server.close();
  setTimeout(() => process.exit(0), 50);
});

// The inline echo backend (stand-in for `portico echo`): replies with JSON describing the request.
import { createServer } from 'node:http';

const port = Number(process.argv[2] === '--port' ? process.argv[3] : (process.env.HTTP_PORT ?? 3000));
const server = createServer((req, res) => {
  const headers = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i].toLowerCase();
    headers[name] = [...(headers[name] ?? []), req.rawHeaders[i + 1]];
  }
  const body = JSON.stringify({
    path: req.url,
    host: req.headers.host ?? '',
    method: req.method,
    proto: `HTTP/${req.httpVersion}`,
    headers,
    namespace: process.env.NAMESPACE ?? '',
    ingress: process.env.INGRESS_NAME ?? '',
    service: process.env.SERVICE_NAME ?? '',
    pod: process.env.POD_NAME ?? '',
  });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(port);
process.on('SIGTERM', () => server.close(() => process.exit(0)));

// A demo forward-auth service for the ExternalAuth example: `Authorization: Bearer letmein` passes and names the
// user in `x-auth-user`; anything else gets a 401 with a short body, which the proxy returns to the client.
// Usage: node examples/external-auth/auth-server.mjs [port]   (default 3011)
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 3011);
createServer((req, res) => {
  if (req.headers.authorization === 'Bearer letmein') {
    res.writeHead(200, { 'x-auth-user': 'alice' });
    res.end();
    return;
  }
  res.writeHead(401, { 'www-authenticate': 'Bearer realm="example"', 'content-type': 'text/plain' });
  res.end('who are you?\n');
}).listen(port, '127.0.0.1', () => console.log(`forward-auth service on 127.0.0.1:${port}`));

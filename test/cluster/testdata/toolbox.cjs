// A pod program for tests: answers /dns (service names resolved inside the pod), /token (a mounted
// file, path given as argv[2]), /secret (argv[3]) and /api (the API server through kubernetes.default.svc with the pod's token).
const dns = require('node:dns');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const path = require('node:path');

function get(client, url, options) {
  return new Promise((resolve, reject) => {
    client
      .get(url, options, (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode, body }));
      })
      .on('error', reject);
  });
}

const sa = path.join(process.env.PORTICO_MOUNT_ROOT, 'var/run/secrets/kubernetes.io/serviceaccount');
http
  .createServer(async (req, res) => {
    try {
      let out;
      if (req.url === '/dns') {
        const short = await dns.promises.lookup('echo');
        const full = await new Promise((resolve, reject) =>
          dns.lookup(`echo.${process.env.MY_NAMESPACE}.svc.cluster.local`, (e, a) => (e ? reject(e) : resolve(a))),
        );
        const reply = await get(http, `http://echo.${process.env.MY_NAMESPACE}.svc/via-dns`);
        const promisified = await require('node:util').promisify(dns.lookup)('echo');
        const txt = await dns.promises.resolveTxt('echo').catch((e) => e.code);
        out = { short: short.address, full, promisified, txt, echo: JSON.parse(reply.body) };
      } else if (req.url === '/token') {
        out = { token: fs.readFileSync(process.argv[2], 'utf8') };
      } else if (req.url === '/secret') {
        out = { secret: fs.readFileSync(process.argv[3], 'utf8') };
      } else if (req.url === '/api') {
        const reply = await get(https, `https://kubernetes.default.svc/api/v1/namespaces/${fs.readFileSync(path.join(sa, 'namespace'), 'utf8')}/pods`, {
          ca: fs.readFileSync(path.join(sa, 'ca.crt')),
          headers: { authorization: `Bearer ${fs.readFileSync(path.join(sa, 'token'), 'utf8')}` },
        });
        out = { status: reply.status, body: JSON.parse(reply.body) };
      }
      res.end(JSON.stringify(out));
    } catch (error) {
      res.statusCode = 500;
      res.end(String(error && error.stack));
    }
  })
  .listen(8080);

// `npm run build`'s native half: compiles the layer-4 relay (src/proxy/layer4/native/relay.c) into
// dist/native/portico-relay.node against Node-API's headers (the `node-api-headers` package), whose ABI holds
// across Node versions. Skipped, with a warning, off Linux or without a C compiler: the proxy then relays
// layer 4 with Node's sockets and says so when it starts.
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(repo, 'src/proxy/layer4/native/relay.c');
const out = join(repo, 'dist/native/portico-relay.node');
const headers = join(repo, 'node_modules/node-api-headers/include');

if (process.platform !== 'linux') {
  process.stderr.write(
    `build-native: skipped on ${process.platform} (the relay is written for Linux's epoll)\n`,
  );
  process.exit(0);
}
const compiler = process.env.CC ?? 'cc';
mkdirSync(dirname(out), { recursive: true });
// Written aside and renamed: a proxy loading the addon never sees half a file.
const flags = ['-O2', '-g', '-Wall', '-Wextra', '-Wno-unused-parameter', '-fPIC', '-shared', '-pthread'];
const result = spawnSync(compiler, [...flags, `-I${headers}`, '-o', `${out}.part`, source], {
  stdio: 'inherit',
});
if (result.error !== undefined && result.error.code === 'ENOENT') {
  process.stderr.write(`build-native: no C compiler (${compiler}): layer 4 will use Node's sockets\n`);
  process.exit(0);
}
if (result.status !== 0) process.exit(result.status ?? 1);
renameSync(`${out}.part`, out);

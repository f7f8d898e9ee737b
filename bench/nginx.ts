// nginx as the benchmarks' peer: a master and `workers` worker processes in a directory of their own, with the
// `http { }` body a bench gives, ready once every port it listens on accepts connections.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { children } from './processes.js';

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** How to run it besides the defaults (a master process and its workers, started directly). */
interface NginxRun {
  /** A command (and its arguments) that runs nginx, e.g. valgrind: nginx's own command line follows it. */
  wrap?: string[];
  /** Without a master process: nginx serves in the one process it was started as (workers must be 1). */
  single?: boolean;
  /** How long it may take to listen; default 5 s. */
  readyMs?: number;
  /** The body of a `stream { }` block (layer-4 proxying; Debian's libnginx-mod-stream is loaded for it). */
  stream?: string;
}

/** Where Debian's libnginx-mod-stream puts nginx's stream module (nginx-light builds it as a dynamic module). */
export const NGINX_STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';

/** Starts nginx in `<parent>/<name>`; `http` is the body of its `http { }` block (temp paths and logs are set). */
export async function startNginx(
  parent: string,
  name: string,
  workers: number,
  http: string,
  ports: number[],
  run: NginxRun = {},
): Promise<{ pid: number | undefined }> {
  const home = join(parent, name);
  mkdirSync(home, { recursive: true });
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'];
  for (const d of temp) rmSync(join(home, d), { force: true, recursive: true });
  writeFileSync(
    join(home, 'nginx.conf'),
    `${run.stream === undefined ? '' : `load_module ${NGINX_STREAM_MODULE};\n`}worker_processes ${workers};
daemon off;${run.single === true ? '\nmaster_process off;' : ''}
pid ${home}/nginx.pid;
error_log ${home}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  ${temp.map((d) => `${d}_temp_path ${join(home, d)};`).join('\n  ')}
${http}
}
${run.stream === undefined ? '' : `stream {\n${run.stream}\n}\n`}`,
  );
  const [command = 'nginx', ...prefix] = [...(run.wrap ?? []), 'nginx'];
  const args = [...prefix, '-p', home, '-c', join(home, 'nginx.conf'), '-e', join(home, 'error.log')];
  const child = spawn(command, args, { stdio: 'ignore' });
  children.push(child);
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });
  const tries = Math.ceil((run.readyMs ?? 5000) / 50);
  for (let i = 0; i < tries; i++) {
    if (exited !== undefined) {
      let log = '';
      try {
        log = readFileSync(join(home, 'error.log'), 'utf8');
      } catch {
        // No log written.
      }
      throw new Error(`nginx exited (${exited}): ${log}`);
    }
    const open = await Promise.all(ports.map(portOpen));
    if (open.every(Boolean)) return { pid: child.pid };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nginx did not listen on ${ports.join(', ')} within ${tries * 50} ms`);
}

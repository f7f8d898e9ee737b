// Readiness probes (httpGet, tcpSocket, exec) against the pod IP.
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { arrayAt, isJsonObject, type JsonObject, numberAt, objectAt, stringAt } from '../apiserver/object.js';

export function resolvePort(container: JsonObject, port: unknown): number | undefined {
  if (typeof port === 'number') return port;
  if (typeof port === 'string' && /^\d+$/.test(port)) return Number(port);
  const named = arrayAt(container, 'ports')
    .filter(isJsonObject)
    .find((p) => p.name === port);
  return named === undefined ? undefined : numberAt(named, 'containerPort');
}

export function probeOnce(
  probe: JsonObject,
  container: JsonObject,
  podIP: string,
  env: Record<string, string>,
): Promise<boolean> {
  const timeoutMs = (numberAt(probe, 'timeoutSeconds') ?? 1) * 1000;
  const http = objectAt(probe, 'httpGet');
  const tcp = objectAt(probe, 'tcpSocket');
  const exec = objectAt(probe, 'exec');
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      resolve(ok);
    };
    if (http !== undefined) {
      const port = resolvePort(container, http.port);
      if (port === undefined) return done(false);
      const headers: Record<string, string> = {};
      for (const h of arrayAt(http, 'httpHeaders').filter(isJsonObject))
        headers[String(h.name)] = String(h.value);
      const req = request(
        {
          host: stringAt(http, 'host') ?? podIP,
          port,
          path: stringAt(http, 'path') ?? '/',
          headers,
          timeout: timeoutMs,
        },
        (res) => {
          res.resume();
          const code = res.statusCode ?? 0;
          done(code >= 200 && code < 400);
        },
      );
      req.on('error', () => done(false));
      req.end();
    } else if (tcp !== undefined) {
      const port = resolvePort(container, tcp.port);
      if (port === undefined) return done(false);
      const socket = connect({ host: stringAt(tcp, 'host') ?? podIP, port });
      socket.on('connect', () => {
        socket.destroy();
        done(true);
      });
      socket.on('error', () => done(false));
    } else if (exec !== undefined) {
      const [cmd, ...args] = arrayAt(exec, 'command').map(String);
      if (cmd === undefined) return done(false);
      const child = spawn(cmd, args, { env, stdio: 'ignore' });
      child.on('exit', (code) => done(code === 0));
      child.on('error', () => done(false));
    } else {
      done(true);
    }
  });
}

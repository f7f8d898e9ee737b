// Runs Portico's proxy from a fleet config file on loopback, every listener on a free port (benchmark child).
import { runStaticProxy } from '../src/proxy/index.js';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: static-proxy.ts FLEET_CONFIG_FILE');
process.exitCode = await runStaticProxy(file, { bindAddress: '127.0.0.1', portMap: () => 0, drainMs: 0 });

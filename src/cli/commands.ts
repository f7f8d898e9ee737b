// The subcommands of `portico`, for its dispatcher and for the shell completion that lists them.
import type { Command } from './command.js';

// Each subcommand loads only its own modules, so `portico proxy` never pays for the controller's imports.
export const COMMANDS: Record<string, Command> = {
  certgen: {
    summary: 'create the CA, server and client certificates for config discovery',
    load: () => import('./certgen.js'),
  },
  cleanup: {
    summary: "delete a controller's proxy fleets, certificates and Lease (when uninstalling it)",
    load: () => import('./cleanup.js'),
  },
  completion: {
    summary: 'print a shell completion script (bash or zsh)',
    load: () => import('./completion.js'),
  },
  controller: {
    summary: 'run the controller on a Kubernetes cluster',
    load: () => import('./controller.js'),
  },
  describe: {
    summary: 'one object in detail: conditions, routes, fleet, problems, recent changes',
    load: () => import('./describe.js'),
  },
  echo: { summary: 'run the echo test backend', load: () => import('./echo.js') },
  get: {
    summary: "kubectl-style tables of the standalone controller's resources",
    load: () => import('./get.js'),
  },
  proxy: {
    summary: 'run a data-plane proxy fed by the discovery server (or a config file)',
    load: () => import('./proxy.js'),
  },
  'shutdown-manager': {
    summary: 'health endpoint and graceful drain of a proxy pod',
    load: () => import('./shutdown-manager.js'),
  },
  standalone: {
    summary: 'run the controller on this machine from YAML files, proxies as local processes',
    load: () => import('./standalone.js'),
  },
  translate: {
    summary: 'translate resources offline: statuses, fleet configs, infrastructure',
    load: () => import('./translate.js'),
  },
  version: { summary: 'print the Portico and Node.js versions', load: () => import('./version.js') },
};

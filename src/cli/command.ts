// A subcommand: its one-line summary and a lazily loaded entry point returning the process exit code.
export interface Command {
  summary: string;
  load: () => Promise<{ run: (argv: string[]) => Promise<number> }>;
}

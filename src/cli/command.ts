// A subcommand: its one-line summary and a lazily loaded entry point returning the process exit code.
export interface Command {
  summary: string;
  /** The module's entry point and its usage text (shown with a usage error). */
  load: () => Promise<{ run: (argv: string[]) => Promise<number>; HELP: string }>;
}

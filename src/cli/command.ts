// A subcommand: its one-line summary and a lazily loaded entry point returning the process exit code.
export interface Command {
  summary: string;
  /**
   * The module's entry point and its usage text (shown with a usage error). `commands` is the whole table, for
   * the one command that lists the others (completion), so it need not import the table that loads it.
   */
  load: () => Promise<{
    run: (argv: string[], commands: Readonly<Record<string, Command>>) => Promise<number>;
    HELP: string;
  }>;
}

// What `describe` prints of a proxy fleet, from whichever source read it (standalone or a cluster).

/** What a source knows of one proxy fleet, ready to print. */
export interface FleetView {
  fleet: string;
  /** Whether the fleet serves the Gateway `namespace/name` of class `className`. */
  serves(gateway: string, className: string): boolean;
  /** Label and value lines (address, config version, process or workload). */
  details: [string, string][];
  /** The proxies, as a table (header and rows); no rows: none connected. */
  proxies: { header: string[]; rows: string[][] };
}

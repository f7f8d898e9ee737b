// What a proxy says about a config it was handed: applied (with the listeners that failed to bind and the
// resources refused alone), or refused whole. The discovery client turns it into an Ack or a Nack.

/** A resource the proxy did not take: its last good version stays in force (a new one is left out). */
export interface RejectedResource {
  /** A fleet resource type; as a proxy received it, so one it could not parse may name another. */
  type: string;
  name: string;
  error: string;
}

export type ApplyOutcome =
  | {
      ok: true;
      listenerErrors: { listener: string; message: string }[];
      /** Resources refused alone: their last good version serves (present only when some were). */
      rejected?: RejectedResource[];
    }
  | { ok: false; error: string };

/**
 * The events a core emits for replica sync and applies from peers: one type per concept, used
 * alike by the core (hooks and apply), the replica-sync codec (which maps them to and from
 * Dynamo's msgpack envelopes) and tests. Field names are camelCase; u64 values are bigint.
 */

/** Which booking an event is about. */
export interface BookingRef {
  modelName: string;
  routingGroup: string;
  blockSize: number;
  requestId: string;
  workerId: bigint;
  dpRank: number;
  loraName: string | null;
}

/**
 * A booking's lifecycle: its admission (`add`), prefill completion (published again on a repeated
 * call) and free. `seq` is the booking's tracking-hash chain (null when a peer sent none);
 * `prefillTokens` is the prefill load it carries (0 when prefill tokens are not tracked).
 */
export type LifecycleEvent = BookingRef & (
  | {
    kind: 'add'; seq: BigUint64Array | null; trackPrefillTokens: boolean; expectedOutputTokens: number | null; prefillTokens: number;
    /** How long ago the owner admitted it, ms (an anti-entropy repair; absent: just now). */
    ageMs?: number;
  }
  | { kind: 'prefill_complete' }
  | { kind: 'free' }
);

/**
 * What a replica did with a peer's lifecycle event: `applied`, or why it was dropped (unknown
 * partition, other block size, a worker rank not registered here, the id claimed here or booked
 * in another partition, `--max-bookings` reached, no live booking for a prefill completion or free).
 */
export type ReplicaEventOutcome = 'applied' | 'unknown_partition' | 'block_size_mismatch' | 'unknown_worker' | 'id_conflict'
  | 'booking_limit' | 'unknown_booking';

/** A session binding (session affinity): committed, rebound or refreshed, versioned by (sequence, writerId). */
export interface AffinityEvent {
  modelName: string;
  routingGroup: string;
  sessionId: string;
  workerId: bigint;
  /** null for a worker-only binding. */
  dpRank: number | null;
  sequence: bigint;
  writerId: bigint;
}

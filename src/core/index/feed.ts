/**
 * Where a partition's KV events come from: the host's feed (the Node service's ZMQ ingress
 * implements it; a simulation or an embedder may feed the index directly instead).
 */
import type { KvIndex } from './kv-index.js';

/** A partition as a KV-event feed sees it. */
export interface FeedPartition { modelName: string; routingGroup: string; blockSize: number; isEagle: boolean; index: KvIndex }

/**
 * The health of one rank's feed:
 * - `connecting`: no connection to the publisher yet;
 * - `connected`: connected, no batch received yet;
 * - `live`: connected, and batches arrive (or nothing is expected);
 * - `silent`: connected, but bookings whose prefill completed with uncached blocks were followed
 *   by no batch within the silence window;
 * - `disconnected`: the connection dropped; retrying;
 * - `error`: the endpoint is invalid or its host does not resolve.
 */
export type KvFeedState = 'connecting' | 'connected' | 'live' | 'silent' | 'disconnected' | 'error';

/** Every feed state, in the order above (counts in `/ready`, the state metric). */
export const KV_FEED_STATES: readonly KvFeedState[] = ['connecting', 'connected', 'live', 'silent', 'disconnected', 'error'];

/** One rank's feed as worker records show it (`kv_events`, wire names). */
export interface KvFeedStatus {
  dp_rank: number;
  endpoint: string;
  state: KvFeedState;
  /** Seconds since the rank's last batch; null before the first. */
  last_event_age_secs: number | null;
  /** Batches applied (live and replayed). */
  batches: number;
  blocks_stored: number;
  blocks_removed: number;
  /** Messages and batches dropped before anything was applied (bad frames, undecodable, stale). */
  dropped: number;
  gaps: number;
  /** Stores whose block size (or token count per block) differs from the worker's `block_size`. */
  block_size_mismatches: number;
  /** Why the feed is in `error` (or why it last failed while `disconnected`); omitted otherwise. */
  reason?: string;
}

/**
 * A KV-event feed. `reconcile` throws (with nothing changed) when an endpoint is invalid; the
 * worker is then `incomplete` with `reconciliation failed: <message>`. A reconcile drops the
 * blocks of ranks whose endpoint changed or went away (only the feed knows); `detach` stops the
 * listeners, and the core then removes the worker's blocks itself.
 */
export interface IndexFeed {
  reconcile(partition: FeedPartition, workerId: bigint, ranks: ReadonlyMap<number, string>, replayEndpoint: string | null): void;
  detach(workerId: bigint): void;
  /** Optional: the worker's feeds, one per rank with a listener, sorted by rank (worker records' `kv_events`). */
  describe?(workerId: bigint): KvFeedStatus[];
  /**
   * Optional: a booking on the rank, made at `bookedAt` (the core's clock, milliseconds),
   * completed prefill with `blocks` complete blocks the rank had not cached, so the engine has
   * published (or is about to publish) them: the feed's expectation signal.
   */
  expectBlocks?(workerId: bigint, dpRank: number, blocks: number, bookedAt: number): void;
}

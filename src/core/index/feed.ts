/**
 * Where a partition's KV events come from: the host's feed (the Node service's ZMQ ingress
 * implements it; a simulation or an embedder may feed the index directly instead).
 */
import type { KvIndex } from './kv-index.js';

/** A partition as a KV-event feed sees it. */
export interface FeedPartition { modelName: string; routingGroup: string; blockSize: number; isEagle: boolean; index: KvIndex }

/**
 * A KV-event feed. `reconcile` throws (with nothing changed) when an endpoint is invalid; the
 * worker is then `incomplete` with `reconciliation failed: <message>`. A reconcile drops the
 * blocks of ranks whose endpoint changed or went away (only the feed knows); `detach` stops the
 * listeners, and the core then removes the worker's blocks itself.
 */
export interface IndexFeed {
  reconcile(partition: FeedPartition, workerId: bigint, ranks: ReadonlyMap<number, string>, replayEndpoint: string | null): void;
  detach(workerId: bigint): void;
}

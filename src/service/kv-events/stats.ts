/**
 * Counters of KV-event ingestion, one set per rank listener (a worker's totals add them up).
 * Every batch, frame and event that does not make it into the index is counted under the
 * reason it was dropped, so bad traffic is visible without ever being fatal.
 */
import type { KvFeedState } from '../../core/index/feed.js';
import type { TransportState } from './zmtp-subscriber.js';

/** Whole messages (live or replayed) dropped before any event was applied. */
export interface DroppedFrames {
  /** A live message without exactly 3 frames, or a replay reply with neither 3 nor 4. */
  frameCount: number;
  /** A sequence frame that is not 8 bytes long. */
  seqLength: number;
  /** A payload that is not msgpack, truncated, or with bytes after the batch. */
  undecodable: number;
  /** Valid msgpack that is not a batch (`[ts, events, rank?]` or a map with ts and events). */
  badShape: number;
  /**
   * A batch whose `data_parallel_rank` is not one of the worker's ranks: its events would be
   * indexed under a rank the worker does not have (in sequence, so the watermark moves past it).
   */
  unknownRank: number;
}

/** Events dropped inside an otherwise good batch. */
export interface DroppedEvents {
  /** Unknown tag, `Ignored`, unknown medium, REMOTE locality or a field of the wrong type. */
  malformed: number;
  /** A `kv_cache_spec_kind` (or learned group kind) that is not main attention. */
  nonMainAttention: number;
  /** A `kv_cache_spec_kind` this service does not know (fails closed, like Dynamo). */
  unknownKind: number;
  /** A non-zero `group_idx` whose kind was never learned from a store. */
  unlearnedGroup: number;
  /** A continuation whose parent's cache namespace is ambiguous (Dynamo `lib/kv-router/src/protocols.rs`). */
  ambiguousNamespace: number;
  /** A store whose `block_size` differs from the worker's (nothing of it is stored). */
  blockSizeMismatch: number;
}

/** Counters of one worker. */
export interface IngestCounters {
  batchesApplied: number;
  /** Of which arrived through replay. */
  batchesReplayed: number;
  eventsApplied: number;
  blocksStored: number;
  blocksRemoved: number;
  clears: number;
  /** Live batches at or below the watermark (duplicates, or a restarted publisher). */
  staleBatches: number;
  /** Gaps seen: a first seq above 0, or a jump. */
  gaps: number;
  /** Batches known missing after gap handling (no replay endpoint, or the ring no longer had them). */
  batchesLost: number;
  /** Replay requests sent, and those that ended without the end marker (timeout, error). */
  replays: number;
  replayFailures: number;
  /** Stores that applied fewer blocks than sent (tokens missing, conflicting holdings). */
  storesStopped: number;
  parentNotFound: number;
  invalidSequence: number;
  /** Removed hashes the rank did not hold. */
  unknownRemoved: number;
  /** Messages over the maximum message size (read past, never buffered). */
  oversizeMessages: number;
  /** Connections to the publisher reset for a protocol violation (bad greeting, not a PUB, bad frame). */
  protocolErrors: number;
  /** Batches whose application threw (a bug, never bad input): logged, the listener goes on. */
  applyErrors: number;
  /** Stores of the worker's block size whose token_ids hold fewer than block_size tokens per block. */
  tokenCountMismatches: number;
  droppedFrames: DroppedFrames;
  droppedEvents: DroppedEvents;
}

/** Zeroed counters. */
export function newCounters(): IngestCounters {
  return {
    batchesApplied: 0, batchesReplayed: 0, eventsApplied: 0, blocksStored: 0, blocksRemoved: 0, clears: 0,
    staleBatches: 0, gaps: 0, batchesLost: 0, replays: 0, replayFailures: 0, storesStopped: 0, parentNotFound: 0,
    invalidSequence: 0, unknownRemoved: 0, oversizeMessages: 0, protocolErrors: 0, applyErrors: 0, tokenCountMismatches: 0,
    droppedFrames: { frameCount: 0, seqLength: 0, undecodable: 0, badShape: 0, unknownRank: 0 },
    droppedEvents: { malformed: 0, nonMainAttention: 0, unknownKind: 0, unlearnedGroup: 0, ambiguousNamespace: 0, blockSizeMismatch: 0 },
  };
}

/** A copy of a set of counters (a snapshot: later events do not change it). */
export const copyCounters = (c: Readonly<IngestCounters>): IngestCounters =>
  ({ ...c, droppedFrames: { ...c.droppedFrames }, droppedEvents: { ...c.droppedEvents } });

/** Adds every counter of `from` into `into` (a worker's total over its ranks); returns `into`. */
export function addCounters(into: IngestCounters, from: Readonly<IngestCounters>): IngestCounters {
  const add = (a: Record<string, number | object>, b: Readonly<Record<string, number | object>>): void => {
    for (const k of Object.keys(b)) {
      const v = b[k];
      if (typeof v === 'number') (a as Record<string, number>)[k] += v;
      else add(a[k] as Record<string, number | object>, v as Record<string, number | object>);
    }
  };
  add(into as unknown as Record<string, number | object>, from as unknown as Record<string, number | object>);
  return into;
}

/** Batches dropped before anything was applied: bad frames, undecodable or mis-shaped payloads, unknown ranks, stale seqs. */
export const droppedBatches = (c: Readonly<IngestCounters>): number => {
  const d = c.droppedFrames;
  return d.frameCount + d.seqLength + d.undecodable + d.badShape + d.unknownRank + c.staleBatches;
};

/** Stores that can never match a selection: another block size, or too few tokens per block. */
export const shapeMismatches = (c: Readonly<IngestCounters>): number => c.droppedEvents.blockSizeMismatch + c.tokenCountMismatches;

/** One rank's listener, as reported by `stats()`. */
export interface RankStats {
  dpRank: number;
  endpoint: string;
  replayEndpoint: string | null;
  /** Highest sequence number applied (null before the first batch). */
  watermark: bigint | null;
  /** The connection to the publisher, and why it last failed (null while connected). */
  transport: TransportState;
  transportError: string | null;
  /** The feed's health now. */
  state: KvFeedState;
  /** This rank's own counters (since its listener started). */
  counters: IngestCounters;
}

/** What `ZmqKvIngress.stats()` reports per worker. */
export interface WorkerIngestStats {
  workerId: bigint;
  ranks: RankStats[];
  /** Totals over the worker's ranks, including ranks retired since it was registered. */
  counters: IngestCounters;
}

/**
 * The apply step: a decoded batch into a partition's index, for one worker (Dynamo `lib/kv-router/src/protocols.rs`,
 * `lib/kv-router/src/indexer/lower_tier.rs`, `lib/kv-router/src/zmq_wire/`). Per event, in Dynamo's order: learn / filter KV groups, resolve the cache
 * namespace, check the block size, then one wasm call. The batch's `data_parallel_rank` names
 * the rank when present, else the listener's rank does.
 *
 * One applier per listener: like Dynamo's per-listener normalizer, its group kinds and
 * namespace map start empty when a rank gets a fresh listener.
 */
import type { KvIndex } from '../../core/index/kv-index.js';
import { StoreStatus } from '../../core/index/index-types.js';
import type { DecodedBatch, DecodedEvent, DecodedRemoved, DecodedStored } from './decode.js';
import { CacheNamespaces } from './namespaces.js';
import { GroupFilter } from './groups.js';
import { IndexWriter } from './index-writer.js';
import type { IngestCounters } from './stats.js';
import { systemClock, type Clock } from '../../core/random.js';

/** Where a worker's events go. */
export interface ApplyTarget {
  index: KvIndex;
  /** The worker's (partition's) block size: stores of any other size are not indexed. */
  blockSize: number;
  workerId: bigint;
}

export class BatchApplier {
  private readonly groups = new GroupFilter();
  private readonly namespaces = new CacheNamespaces();
  private readonly writer: IndexWriter;
  /** rank -> slot, checked against the slot table before use (slots are reused after release). */
  private readonly slotOf = new Map<number, number>();
  /** Every rank this applier indexed blocks for (its own, and any a batch named). */
  readonly ranks = new Set<number>();
  /** When the last batch was applied (the clock's milliseconds); null before the first. */
  lastBatchAt: number | null = null;

  constructor(private readonly target: ApplyTarget, private readonly counters: IngestCounters, private readonly clock: Clock = systemClock) {
    this.writer = new IndexWriter(target.index);
  }

  /** Apply every event of `batch` (synchronous: the scratch regions are used without a gap). */
  apply(batch: DecodedBatch, listenerRank: number): void {
    this.applyFrom(batch, listenerRank, 0, null);
  }

  /**
   * Apply the events of `batch` from event `from` on, in order, until `stop()` says the time is up
   * (asked after each index call); returns where to go on from (call again with it), or -1 once
   * the batch is done (then counted as applied). Each index call is synchronous, so slices only
   * ever split a batch between events; the caller keeps `batch` valid until it is done.
   */
  applyFrom(batch: DecodedBatch, listenerRank: number, from: number, stop: (() => boolean) | null): number {
    const rank = batch.dpRank ?? listenerRank;
    const c = this.counters;
    if (from === 0) c.droppedEvents.malformed += batch.dropped;
    const events = batch.events;
    for (let i = from; i < events.length; i++) {
      const e = events[i];
      if (e.kind === 'stored') this.stored(e, batch, rank);
      else if (e.kind === 'removed') i = this.removed(events, i, batch, rank);
      else {
        this.namespaces.cleared(rank);
        this.target.index.cleared(this.target.workerId, rank);
        c.clears++;
        c.eventsApplied++;
      }
      if (stop !== null && i + 1 < events.length && stop()) return i + 1;
    }
    c.batchesApplied++;
    this.lastBatchAt = this.clock.now();
    return -1;
  }

  /** The rank's slot; interned when `create`, else -1 when the rank holds nothing. */
  private slot(rank: number, create: boolean): number {
    const { index, workerId } = this.target;
    const cached = this.slotOf.get(rank);
    if (cached !== undefined) {
      const wr = index.slots.get(cached);
      if (wr !== null && wr.workerId === workerId && wr.dpRank === rank) return cached;
    }
    const s = create ? index.slot(workerId, rank) : index.slots.find(workerId, rank);
    if (s >= 0) { this.slotOf.set(rank, s); this.ranks.add(rank); }
    return s;
  }

  private stored(e: DecodedStored, batch: DecodedBatch, rank: number): void {
    const c = this.counters;
    this.groups.learn(rank, e.groupIdx, e.kvCacheSpecKind);
    const verdict = this.groups.verdict(rank, e.groupIdx, e.kvCacheSpecKind);
    if (verdict !== null) { c.droppedEvents[verdict]++; return; }
    const ns = this.namespaces.resolve(rank, e.cacheSalt, e.hasParent, e.parentLo, e.parentHi, batch.hashes, e.hashStart, e.count);
    if (ns === null) { c.droppedEvents.ambiguousNamespace++; return; }
    const bs = this.target.blockSize;
    if (e.blockSize !== bs) { c.droppedEvents.blockSizeMismatch++; return; }
    if (e.tokenCount < e.count * bs) c.tokenCountMismatches++;
    const st = this.writer.store(this.slot(rank, true), e, batch, ns);
    this.target.index.countStore(st, e.count);
    if (st === StoreStatus.ParentNotFound) c.parentNotFound++;
    else if (st === StoreStatus.InvalidSequence) c.invalidSequence++;
    else if (st >= 0) {
      c.blocksStored += st;
      if (st < e.count) c.storesStopped++;
    }
    c.eventsApplied++;
  }

  /**
   * Applies the BlockRemoved at `events[i]` together with the removes right after it that have
   * the same tier and continue its hash range (vLLM sends one event per evicted block: a batch
   * often holds hundreds in a row), in one index call; removes in order, exactly as one call per
   * event would. Returns the index of the last event consumed.
   */
  private removed(events: readonly DecodedEvent[], i: number, batch: DecodedBatch, rank: number): number {
    const c = this.counters, e = events[i] as DecodedRemoved;
    const verdict = this.groups.verdict(rank, e.groupIdx, null);
    if (verdict !== null) { c.droppedEvents[verdict]++; return i; }
    let last = i, count = e.count;
    for (let j = i + 1; j < events.length; j++) {
      const n = events[j];
      if (n.kind !== 'removed' || n.tier !== e.tier || n.hashStart !== e.hashStart + count) break;
      if (this.groups.verdict(rank, n.groupIdx, null) !== null) break;
      count += n.count;
      last = j;
    }
    this.namespaces.removed(rank, batch.hashes, e.hashStart, count);
    const s = this.slot(rank, false);
    const found = s < 0 ? 0 : this.writer.remove(s, e.tier, batch.hashes, e.hashStart, count);
    this.target.index.countRemove(found, count);
    c.blocksRemoved += found;
    c.unknownRemoved += count - found;
    c.eventsApplied += last - i + 1;
    return last;
  }
}

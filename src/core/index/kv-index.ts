/**
 * KvIndex: the typed index API the rest of the service uses, one per partition (fixed block
 * size). It interns workers into dense slots, applies events (counting what it had to skip),
 * matches requests into per-rank tiered overlap, computes /overlap_scores rows, and dumps /
 * loads the index as the RouterEvent list of Dynamo `lib/kv-router/src/services/indexer/server.rs`.
 */
import { WasmPrefixIndex } from './wasm-index.js';
import { SlotTable, type WorkerRank } from './slots.js';
import { StoreStatus, TIER_NAMES, Tier, type BlockRef, type Holding } from './index-types.js';

/** Counters of events that changed nothing (or less than asked). */
export interface IndexCounters {
  storedBlocks: number;
  removedBlocks: number;
  parentNotFound: number;
  invalidSequence: number;
  unknownRemoved: number;
  storeStopped: number;
}

/** One /overlap_scores row (Dynamo `lib/kv-router/src/services/selection/core/queries.rs`). Counts are blocks. */
export interface OverlapRow {
  worker_id: bigint; dp_rank: number;
  device_blocks: number; host_pinned_blocks: number; disk_blocks: number;
  host_pinned_extension_blocks: number; disk_extension_blocks: number;
  shared_beyond_device_blocks: number | null; router_credit_blocks: number;
}

/** Per-rank overlap of one request, with the cache-credit results of Dynamo `lib/kv-router/src/scheduling/overlap.rs`. */
export interface RankOverlap extends WorkerRank {
  /** `worker_id:dp_rank`. */
  key: string;
  device: number; hostExt: number; diskExt: number; externalExt: number;
  effectiveOverlapBlocks: number; cachedTokens: number; effectivePrefillTokens: number; routerCreditBlocks: number;
}

export interface CreditWeights { overlapScoreCredit: number; hostCacheHitWeight: number; diskCacheHitWeight: number }

/** A RouterEvent of Dynamo `lib/kv-router/src/services/indexer/server.rs` (hashes as bigint; the HTTP layer writes them digit-exact). */
export interface RouterEvent {
  worker_id: bigint;
  storage_tier: (typeof TIER_NAMES)[number];
  event: {
    event_id: number;
    dp_rank: number;
    data: { stored: { parent_hash: bigint | null; start_position: number | null; blocks: { block_hash: bigint; tokens_hash: bigint; mm_extra_info: null }[] } }
      | { removed: { block_hashes: bigint[] } } | 'cleared';
  };
}

export class KvIndex {
  readonly blockSize: number;
  readonly index: WasmPrefixIndex;
  readonly slots = new SlotTable();
  readonly counters: IndexCounters = { storedBlocks: 0, removedBlocks: 0, parentNotFound: 0, invalidSequence: 0, unknownRemoved: 0, storeStopped: 0 };

  constructor(blockSize: number, index: WasmPrefixIndex = new WasmPrefixIndex()) {
    this.blockSize = blockSize;
    this.index = index;
  }

  /** The slot of a worker rank, interned (and sized in wasm) when new. */
  slot(workerId: bigint, dpRank: number): number {
    const s = this.slots.intern(workerId, dpRank);
    this.index.ensureSlots(this.slots.size);
    return s;
  }

  /** Account the status of a store of `n` blocks. */
  countStore(status: number, n: number): void {
    if (status === StoreStatus.ParentNotFound) this.counters.parentNotFound++;
    else if (status === StoreStatus.InvalidSequence) this.counters.invalidSequence++;
    else if (status >= 0) {
      this.counters.storedBlocks += status;
      if (status < n) this.counters.storeStopped++;
    }
  }

  /** Account a remove of `n` hashes of which `found` were held. */
  countRemove(found: number, n: number): void {
    this.counters.removedBlocks += found;
    this.counters.unknownRemoved += n - found;
  }

  /** Stored(parent?, blocks) for a worker rank on a tier (cold form; hot callers use `index`). */
  stored(workerId: bigint, dpRank: number, tier: Tier, parent: bigint | null, blocks: readonly BlockRef[]): number {
    const st = this.index.store(this.slot(workerId, dpRank), tier, parent, blocks);
    this.countStore(st, blocks.length);
    return st;
  }

  /** Removed(hashes); returns how many were held. */
  removed(workerId: bigint, dpRank: number, tier: Tier, hashes: readonly bigint[]): number {
    const s = this.slots.find(workerId, dpRank);
    const found = s < 0 ? 0 : this.index.remove(s, tier, hashes);
    this.countRemove(found, hashes.length);
    return found;
  }

  /** Cleared for one worker rank (every tier). */
  cleared(workerId: bigint, dpRank: number): void {
    const s = this.slots.find(workerId, dpRank);
    if (s >= 0) this.index.clear(s, -1);
  }

  /** Remove a worker rank entirely (its blocks and its slot). */
  removeRank(workerId: bigint, dpRank: number): void {
    const s = this.slots.find(workerId, dpRank);
    if (s < 0) return;
    this.index.removeSlot(s);
    this.slots.release(s);
  }

  /** Remove a worker: all its ranks. */
  removeWorker(workerId: bigint): void {
    for (const s of this.slots.slotsOf(workerId)) { this.index.removeSlot(s); this.slots.release(s); }
  }

  /**
   * Match the `n` local hashes already in scratch (`hashBlocksToScratch`, or `Wasm.writeLocals`)
   * and compute cache credit for an input of `isl` tokens. Only ranks with some overlap are
   * returned.
   */
  matchScratch(n: number, isl: number, w: CreditWeights): RankOverlap[] {
    const ix = this.index;
    const rows = ix.matchN(n);
    ix.credit(rows, this.blockSize, isl, w.overlapScoreCredit, w.hostCacheHitWeight, w.diskCacheHitWeight);
    const s = ix.rowSlots(), d = ix.rowDevice(), h = ix.rowHost(), k = ix.rowDisk(), x = ix.rowExternal();
    const eff = ix.rowEffectiveBlocks(), cr = ix.rowCreditBlocks(), ca = ix.rowCachedTokens(), ep = ix.rowEffectivePrefill();
    const out: RankOverlap[] = [];
    for (let i = 0; i < rows; i++) {
      const wr = this.slots.get(s[i]);
      if (!wr) continue;
      out.push({ workerId: wr.workerId, dpRank: wr.dpRank, key: wr.key, device: d[i], hostExt: h[i], diskExt: k[i], externalExt: x[i],
        effectiveOverlapBlocks: eff[i], cachedTokens: ca[i], effectivePrefillTokens: ep[i], routerCreditBlocks: cr[i] });
    }
    return out;
  }

  /**
   * The hot form of {@link match}: matches `locals` and computes their cache credit, leaving the
   * rows in the wasm output regions, by slot and with no object per row (read them with
   * `index.rowSlots()`, `rowDevice()`, `rowHost()`, `rowDisk()`, `rowExternal()`,
   * `rowCachedTokens()`; a slot's rank is `slots.get(slot)`). Returns the row count; the regions
   * stay valid until the next index call.
   */
  matchRows(locals: ArrayLike<bigint>, isl: number, w: CreditWeights): number {
    const ix = this.index;
    ix.wasm.writeLocals(locals);
    const rows = ix.matchN(locals.length);
    ix.credit(rows, this.blockSize, isl, w.overlapScoreCredit, w.hostCacheHitWeight, w.diskCacheHitWeight);
    return rows;
  }

  /** Match a list of local hashes (copied into scratch in one typed-array copy). */
  match(locals: ArrayLike<bigint>, isl: number, w: CreditWeights): RankOverlap[] {
    this.index.wasm.writeLocals(locals);
    return this.matchScratch(locals.length, isl, w);
  }

  /**
   * The engine block hashes a worker rank holds along the device path of `locals`, root-aligned
   * and contiguous (kv_hint sources, Dynamo `lib/kv-router/src/services/selection/core/hint.rs`).
   */
  chainExts(workerId: bigint, dpRank: number, locals: ArrayLike<bigint>): bigint[] {
    const s = this.slots.find(workerId, dpRank);
    if (s < 0 || locals.length === 0) return [];
    const ix = this.index;
    ix.wasm.writeLocals(locals);
    const d = ix.chainExtsN(locals.length, s);
    return d > 0 ? Array.from(ix.wasm.exts().subarray(0, d)) : [];
  }

  /** Blocks a worker rank holds on a tier. */
  treeSize(workerId: bigint, dpRank: number, tier: Tier = Tier.Device): number {
    const s = this.slots.find(workerId, dpRank);
    return s < 0 ? 0 : this.index.treeSize(s, tier);
  }

  /**
   * The index as RouterEvents (Dynamo `lib/kv-router/src/services/indexer/server.rs`): Stored events only, device tier breadth-first then
   * the lower tiers; a worker's consecutive blocks along a single-child chain are merged into
   * one event, so a linear prefix dumps as one event per worker.
   */
  dumpEvents(): RouterEvent[] {
    return holdingsToEvents(this.index.dumpHoldings(), this.slots);
  }

  /** Apply RouterEvents (a peer's dump, or any event list); returns how many applied cleanly. */
  loadEvents(events: readonly RouterEvent[]): number {
    let ok = 0;
    for (const e of events) {
      const tier = TIER_NAMES.indexOf(e.storage_tier ?? 'device') as Tier;
      const data = e.event.data;
      if (tier < 0) continue;
      if (data === 'cleared') { this.cleared(e.worker_id, e.event.dp_rank); ok++; continue; }
      if ('stored' in data) {
        const blocks = data.stored.blocks.map((b) => ({ ext: b.block_hash, local: b.tokens_hash }));
        if (this.stored(e.worker_id, e.event.dp_rank, tier, data.stored.parent_hash, blocks) === blocks.length) ok++;
      } else if ('removed' in data) {
        this.removed(e.worker_id, e.event.dp_rank, tier, data.removed.block_hashes);
        ok++;
      }
    }
    return ok;
  }

  /** Free the wasm memory of this index. */
  destroy(): void { this.index.destroy(); }
}

/** Group holdings into Stored events (see KvIndex.dumpEvents). */
export function holdingsToEvents(holdings: readonly Holding[], slots: SlotTable): RouterEvent[] {
  const childCount = new Map<string, number>();
  for (const h of holdings) if (h.parentExt !== null) {
    const k = `${h.tier}:${h.slot}:${h.parentExt}`;
    childCount.set(k, (childCount.get(k) ?? 0) + 1);
  }
  const open = new Map<string, RouterEvent>();
  const events: RouterEvent[] = [];
  for (const h of holdings) {
    const wr = slots.get(h.slot);
    if (!wr) continue;
    const block = { block_hash: h.ext, tokens_hash: h.local, mm_extra_info: null };
    const pk = `${h.tier}:${h.slot}:${h.parentExt}`;
    const prev = h.parentExt !== null && childCount.get(pk) === 1 ? open.get(pk) : undefined;
    if (prev) {
      const data = prev.event.data as { stored: { blocks: typeof block[] } };
      data.stored.blocks.push(block);
      open.delete(pk);
      open.set(`${h.tier}:${h.slot}:${h.ext}`, prev);
      continue;
    }
    const ev: RouterEvent = {
      worker_id: wr.workerId, storage_tier: TIER_NAMES[h.tier],
      event: { event_id: events.length, dp_rank: wr.dpRank, data: { stored: { parent_hash: h.parentExt, start_position: null, blocks: [block] } } },
    };
    events.push(ev);
    open.set(`${h.tier}:${h.slot}:${h.ext}`, ev);
  }
  return events;
}

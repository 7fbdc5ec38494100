/**
 * Booking recorder with TTL retention (Dynamo `lib/kv-router/src/approx.rs`): in approximate mode (no KV events) it
 * feeds the partition's primary index; with `router_predicted_ttl_secs` it feeds a side index.
 * A recorded booking is a synthetic Stored event for the booked rank from the root:
 * `{tokens_hash: local[i], block_hash: seq[i]}` with the prompt's PUBLIC sequence hashes.
 *
 * Retention: each (rank, block) expires `ttl` after its last recording (re-recording refreshes).
 * When the recorded size exceeds 2^20 blocks, the earliest-expiring entries go until the size
 * is at most floor(2^20 * 0.8); ties drop the deepest block first.
 *
 * Expiry order: every entry expires at `record time + ttl` with one ttl and a monotonic clock,
 * so a list re-appended on refresh stays sorted by expiry; expiry and pruning pop from its front.
 *
 * Entries live in typed arrays (rank, hash words, position, expiry, list links) with an
 * open-addressing table by (rank, hash): a booking records every prompt block, and the former
 * `Map<"worker:rank:hash", object>` made a BigInt string, a key and an object per block, ~1 µs a
 * block, most of a `select_and_reserve` (130 of 224 µs at 128 workers, 132-block prompts).
 */
import { LIMITS } from '../config/config.js';
import { PUBLIC_SEED, chainToScratch } from './hashing.js';
import { Tier } from './index-types.js';
import { getWasm } from './wasm.js';
import { rankKeyOf } from './slots.js';
import { WordTable, grown } from './word-table.js';
import type { KvIndex } from './kv-index.js';
import type { Clock } from '../random.js';

export interface ApproxOptions {
  clock: Clock;
  ttlSecs: number;
  /** Max recorded blocks before pruning (default 2^20). */
  maxTreeSize?: number;
  /** Pruning target as a fraction of the max (default 0.8). */
  pruneTargetRatio?: number;
}

const NIL = -1;

export class ApproxIndex {
  readonly index: KvIndex;
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly maxSize: number;
  private readonly target: number;
  /** Ranks recorded here, interned: `worker:rank` -> id. */
  private readonly rankIds = new Map<string, number>();
  private readonly rankWorker: bigint[] = [];
  private readonly rankDp: number[] = [];
  /** (rank id, hash lo, hi) -> entry; entries in expiry order (see the file comment). */
  private readonly table = new WordTable();
  private pos: Int32Array = new Int32Array(64);
  private expiresAt: Float64Array = new Float64Array(64);
  private prev: Int32Array = new Int32Array(64);
  private next: Int32Array = new Int32Array(64);
  private head = NIL;
  private tail = NIL;
  /** The booking's sequence-hash words, copied out of scratch before the store (it may grow memory). */
  private words: Uint32Array = new Uint32Array(64);

  constructor(index: KvIndex, o: ApproxOptions) {
    this.index = index;
    this.clock = o.clock;
    this.ttlMs = o.ttlSecs * 1000;
    this.maxSize = o.maxTreeSize ?? LIMITS.approximateMaxTreeSize;
    this.target = Math.floor(this.maxSize * (o.pruneTargetRatio ?? LIMITS.approximatePruneTargetRatio));
  }

  /** Recorded blocks held. */
  get size(): number { return this.table.size; }

  /** Records a booking of `locals` (public local hashes) on a rank. */
  record(workerId: bigint, dpRank: number, locals: BigUint64Array): void {
    const n = locals.length;
    if (n === 0) return;
    const ix = this.index;
    const slot = ix.slot(workerId, dpRank); // sizes wasm regions first: scratch written below stays put
    const w = getWasm();
    w.writeLocals(locals);
    chainToScratch(n, PUBLIC_SEED);
    if (this.words.length < 2 * n) this.words = new Uint32Array(2 * n);
    const words = this.words;
    words.set(w.extWords().subarray(0, 2 * n));
    w.setParent(0n);
    // the same store as `KvIndex.stored(worker, rank, Device, null, blocks)`: locals and the
    // chained hashes are already where it would write them
    const st = ix.index.storeN(slot, Tier.Device, false, n);
    ix.countStore(st, n);
    const applied = Math.max(0, st);
    const expiresAt = this.clock.now() + this.ttlMs;
    const rank = this.rankId(workerId, dpRank);
    for (let i = 0; i < applied; i++) {
      const e = this.table.findOrAdd(words[2 * i], words[2 * i + 1], rank);
      if (this.table.added) this.grow(this.table.capacity);
      else this.unlink(e);
      this.pos[e] = i;
      this.expiresAt[e] = expiresAt;
      this.append(e);
    }
    if (this.table.size > this.maxSize) this.prune();
  }

  /** Removes every entry whose TTL passed. Cheap when nothing is due (one look at the front). */
  expire(): void {
    const now = this.clock.now();
    while (this.head !== NIL && !(this.expiresAt[this.head] > now)) this.drop(this.head, true);
  }

  /** Pops earliest-expiring entries (deepest first among equals) down to the target size. */
  private prune(): void {
    while (this.table.size > this.target) {
      // the front group shares one expiry; drop its deepest blocks first
      const group: number[] = [];
      const at = this.expiresAt[this.head];
      for (let e = this.head; e !== NIL && this.expiresAt[e] === at; e = this.next[e]) group.push(e);
      group.sort((a, b) => this.pos[b] - this.pos[a]);
      for (const e of group) {
        if (this.table.size <= this.target) break;
        this.drop(e, true);
      }
    }
  }

  /** Forgets entry `e`; with `fromIndex`, removes its block from the index too. */
  private drop(e: number, fromIndex: boolean): void {
    const t = this.table;
    const lo = t.lo[e], hi = t.hi[e], rank = t.tag[e];
    this.unlink(e);
    t.remove(e);
    if (fromIndex) {
      const ext = (BigInt(hi) << 32n) | BigInt(lo);
      this.index.removed(this.rankWorker[rank], this.rankDp[rank], Tier.Device, [ext]);
    }
  }

  /** Forgets a worker rank (the caller removes it from the index). */
  removeRank(workerId: bigint, dpRank: number): void {
    const rank = this.rankIds.get(rankKeyOf(workerId, dpRank));
    if (rank !== undefined) {
      for (let e = this.head; e !== NIL;) {
        const nx = this.next[e];
        if (this.table.tag[e] === rank) this.drop(e, false);
        e = nx;
      }
    }
    this.index.removeRank(workerId, dpRank);
  }

  private rankId(workerId: bigint, dpRank: number): number {
    const k = rankKeyOf(workerId, dpRank);
    let r = this.rankIds.get(k);
    if (r === undefined) {
      r = this.rankWorker.length;
      this.rankIds.set(k, r);
      this.rankWorker.push(workerId);
      this.rankDp.push(dpRank);
    }
    return r;
  }

  private append(e: number): void {
    this.prev[e] = this.tail;
    this.next[e] = NIL;
    if (this.tail !== NIL) this.next[this.tail] = e; else this.head = e;
    this.tail = e;
  }

  private unlink(e: number): void {
    const p = this.prev[e], q = this.next[e];
    if (p !== NIL) this.next[p] = q; else this.head = q;
    if (q !== NIL) this.prev[q] = p; else this.tail = p;
  }

  /** Sizes the per-entry arrays for `cap` entries (the table's entry capacity). */
  private grow(cap: number): void {
    if (cap <= this.pos.length) return;
    this.pos = grown(this.pos, cap);
    this.prev = grown(this.prev, cap);
    this.next = grown(this.next, cap);
    this.expiresAt = grown(this.expiresAt, cap);
  }
}

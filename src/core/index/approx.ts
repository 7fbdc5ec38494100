/**
 * Booking recorder with TTL retention (algorithms §2.4): in approximate mode (no KV events) it
 * feeds the partition's primary index; with `router_predicted_ttl_secs` it feeds a side index.
 * A recorded booking is a synthetic Stored event for the booked rank from the root:
 * `{tokens_hash: local[i], block_hash: seq[i]}` with the prompt's PUBLIC sequence hashes.
 *
 * Retention: each (rank, block) expires `ttl` after its last recording (re-recording refreshes).
 * When the recorded size exceeds 2^20 blocks, the earliest-expiring entries go until the size
 * is at most floor(2^20 * 0.8); ties drop the deepest block first.
 *
 * Expiry order: every entry expires at `record time + ttl` with one ttl and a monotonic clock,
 * so a Map re-inserted on refresh stays sorted by expiry; expiry and pruning pop from its front.
 */
import { LIMITS } from '../config/config.js';
import { PUBLIC_SEED, chainToScratch } from './hashing.js';
import { Tier, type BlockRef } from './index-types.js';
import { getWasm } from './wasm.js';
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

interface Entry { workerId: bigint; dpRank: number; ext: bigint; pos: number; expiresAt: number }

export class ApproxIndex {
  readonly index: KvIndex;
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly maxSize: number;
  private readonly target: number;
  /** key `worker:rank:ext` -> entry, in expiry order (see the file comment). */
  private readonly entries = new Map<string, Entry>();

  constructor(index: KvIndex, o: ApproxOptions) {
    this.index = index;
    this.clock = o.clock;
    this.ttlMs = o.ttlSecs * 1000;
    this.maxSize = o.maxTreeSize ?? LIMITS.approximateMaxTreeSize;
    this.target = Math.floor(this.maxSize * (o.pruneTargetRatio ?? LIMITS.approximatePruneTargetRatio));
  }

  /** Recorded blocks held. */
  get size(): number { return this.entries.size; }

  /** Records a booking of `locals` (public local hashes) on a rank. */
  record(workerId: bigint, dpRank: number, locals: BigUint64Array): void {
    const n = locals.length;
    if (n === 0) return;
    const w = getWasm();
    w.writeLocals(locals);
    chainToScratch(n, PUBLIC_SEED);
    const seq = w.exts().slice(0, n);
    const blocks: BlockRef[] = new Array(n);
    for (let i = 0; i < n; i++) blocks[i] = { ext: seq[i], local: locals[i] };
    const applied = Math.max(0, this.index.stored(workerId, dpRank, Tier.Device, null, blocks));
    const expiresAt = this.clock.now() + this.ttlMs;
    for (let i = 0; i < applied; i++) {
      const key = `${workerId}:${dpRank}:${seq[i]}`;
      this.entries.delete(key);
      this.entries.set(key, { workerId, dpRank, ext: seq[i], pos: i, expiresAt });
    }
    if (this.entries.size > this.maxSize) this.prune();
  }

  /** Removes every entry whose TTL passed. Cheap when nothing is due (one look at the front). */
  expire(): void {
    const now = this.clock.now();
    for (const [key, e] of this.entries) {
      if (e.expiresAt > now) break;
      this.drop(key, e);
    }
  }

  /** Pops earliest-expiring entries (deepest first among equals) down to the target size. */
  private prune(): void {
    while (this.entries.size > this.target) {
      // the front group shares one expiry; drop its deepest blocks first
      const group: [string, Entry][] = [];
      let at = -1;
      for (const kv of this.entries) {
        if (group.length > 0 && kv[1].expiresAt !== at) break;
        at = kv[1].expiresAt;
        group.push(kv);
      }
      group.sort((a, b) => b[1].pos - a[1].pos);
      for (const [key, e] of group) {
        if (this.entries.size <= this.target) break;
        this.drop(key, e);
      }
    }
  }

  private drop(key: string, e: Entry): void {
    this.entries.delete(key);
    this.index.removed(e.workerId, e.dpRank, Tier.Device, [e.ext]);
  }

  /** Forgets a worker rank (the caller removes it from the index). */
  removeRank(workerId: bigint, dpRank: number): void {
    for (const [key, e] of this.entries) if (e.workerId === workerId && e.dpRank === dpRank) this.entries.delete(key);
    this.index.removeRank(workerId, dpRank);
  }
}

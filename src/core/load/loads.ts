/**
 * Active-load accounting of one partition (algorithms §6, api §5.3-§5.4): per worker rank the
 * booked requests, their prompt blocks deduplicated by sequence hash (a block shared by several
 * requests counts once), prefill tokens until prefill completes, output blocks (random hashes,
 * never shared) with optional decay weights, and the expiry guard by absolute age.
 *
 * Tracking hashes arrive as (lo, hi) u32 word pairs (`NormalizedPrompt.seqWords`), so nothing on
 * this path creates a BigInt per block.
 */
import { U64Counts } from './u64-counts.js';
import { PrefillRates } from './prefill-rate.js';
import { rankKeyOf as rankKey, type WorkerRank } from '../index/slots.js';
import type { Clock, Rng } from '../random.js';

export interface LoadsOptions {
  blockSize: number;
  clock: Clock;
  rng: Rng;
  /** Absolute-age expiry of a booking, seconds (`DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS`). */
  expirySecs: number;
}

/** What a booking adds (AddRequest, algorithms §6.2). */
export interface BookingInput {
  /** Tracking hashes as (lo, hi) words: block i is words [2i, 2i+1]. */
  seq: Uint32Array;
  nBlocks: number;
  trackPrefillTokens: boolean;
  /** `initial_effective_prefill_tokens`; booked only when tracking and > 0. */
  prefillTokens: number;
  expectedOutputTokens?: number;
  islTokens: number;
  loraName?: string;
}

/** What a prefill completion reports (see {@link ActiveLoads.prefillComplete}). */
export interface PrefillDone { uncachedTokens: number; bookedAt: number }

/** The current load of one rank (no prompt). */
export interface RankLoad { activePrefillTokens: number; activeDecodeBlocks: number; activeRequests: number }

interface Booking {
  readonly id: string;
  readonly rank: RankState;
  /** Prompt then output hashes, as word pairs (output blocks appended). */
  words: Uint32Array;
  nBlocks: number;
  prefillTokens: number;
  prefillDone: boolean;
  /** The prompt tokens the rank had not cached (booked or not), until the first prefill completion reports them. */
  uncachedTokens: number;
  readonly admittedAt: number;
  readonly expectedOutputTokens?: number;
  readonly loraName?: string;
}

interface RankState {
  readonly workerId: bigint;
  readonly dpRank: number;
  readonly blocks: U64Counts;
  readonly requests: Map<string, Booking>;
  prefillTokens: number;
}


export class ActiveLoads {
  private readonly o: LoadsOptions;
  private readonly byRank = new Map<string, RankState>();
  private readonly byId = new Map<string, Booking>();
  /** Prefill throughput per rank, learned from bookings and their prefill completions. */
  readonly prefillRates = new PrefillRates();

  constructor(o: LoadsOptions) { this.o = o; }

  /** Makes sure a rank exists (a schedulable rank reports zero load). */
  addRank(workerId: bigint, dpRank: number): void {
    const k = rankKey(workerId, dpRank);
    if (!this.byRank.has(k)) {
      this.byRank.set(k, { workerId, dpRank, blocks: new U64Counts(), requests: new Map(), prefillTokens: 0 });
    }
  }

  /** Removes a rank and every booking on it; returns the freed ids. */
  removeRank(workerId: bigint, dpRank: number): string[] {
    const k = rankKey(workerId, dpRank);
    const st = this.byRank.get(k);
    if (!st) return [];
    const ids = [...st.requests.keys()];
    for (const id of ids) this.byId.delete(id);
    this.byRank.delete(k);
    this.prefillRates.removeRank(k);
    return ids;
  }

  /** Every rank known here. */
  ranks(): WorkerRank[] {
    return [...this.byRank.values()].map((s) => ({ workerId: s.workerId, dpRank: s.dpRank }));
  }

  has(id: string): boolean { return this.byId.has(id); }

  /** The rank a booking is on. */
  rankOf(id: string): WorkerRank | undefined {
    const b = this.byId.get(id);
    return b ? { workerId: b.rank.workerId, dpRank: b.rank.dpRank } : undefined;
  }

  /** Number of live bookings. */
  get size(): number { return this.byId.size; }

  /**
   * Books a request on a rank (AddRequest). False (nothing changed) for a duplicate id or an
   * unknown rank: bookings never re-create a removed rank.
   */
  book(id: string, workerId: bigint, dpRank: number, input: BookingInput): boolean {
    if (this.byId.has(id)) return false;
    const st = this.byRank.get(rankKey(workerId, dpRank));
    if (!st) return false;
    const n = input.nBlocks;
    const words = new Uint32Array(Math.max(4, n * 2));
    words.set(input.seq.subarray(0, n * 2));
    for (let i = 0; i < n; i++) st.blocks.inc(words[2 * i], words[2 * i + 1]);
    const prefill = input.trackPrefillTokens && input.prefillTokens > 0 ? input.prefillTokens : 0;
    const b: Booking = {
      id, rank: st, words, nBlocks: n, prefillTokens: prefill, prefillDone: prefill === 0, uncachedTokens: Math.max(input.prefillTokens, 0),
      admittedAt: this.o.clock.now(), expectedOutputTokens: input.expectedOutputTokens, loraName: input.loraName,
    };
    st.prefillTokens += prefill;
    st.requests.set(id, b);
    this.byId.set(id, b);
    return true;
  }

  /**
   * Prefill done: the request's prefill tokens leave the rank (idempotent). Returns null for an
   * unknown id, else when the booking was made and the prompt tokens the rank had not cached
   * (the tokens the engine has just computed; 0 on a repeated call).
   */
  prefillComplete(id: string): PrefillDone | null {
    const b = this.byId.get(id);
    if (!b) return null;
    if (!b.prefillDone) {
      b.rank.prefillTokens -= b.prefillTokens;
      b.prefillDone = true;
      this.prefillRates.observe(rankKey(b.rank.workerId, b.rank.dpRank), b.prefillTokens, b.admittedAt, this.o.clock.now());
    }
    const uncachedTokens = b.uncachedTokens;
    b.uncachedTokens = 0;
    return { uncachedTokens, bookedAt: b.admittedAt };
  }

  /**
   * One more output block (a random, never-shared hash). With `decayFraction`, every block of
   * the request that only this request references gets that weight (algorithms §6.2).
   */
  addOutputBlock(id: string, decayFraction?: number): boolean {
    const b = this.byId.get(id);
    if (!b) return false;
    const rng = this.o.rng;
    const lo = Math.floor(rng.next() * 0x100000000) >>> 0, hi = Math.floor(rng.next() * 0x100000000) >>> 0;
    if ((b.nBlocks + 1) * 2 > b.words.length) {
      const grown = new Uint32Array(b.words.length * 2);
      grown.set(b.words);
      b.words = grown;
    }
    b.words[2 * b.nBlocks] = lo;
    b.words[2 * b.nBlocks + 1] = hi;
    b.nBlocks++;
    const blocks = b.rank.blocks;
    blocks.inc(lo, hi);
    if (decayFraction !== undefined) {
      for (let i = 0; i < b.nBlocks; i++) {
        const wl = b.words[2 * i], wh = b.words[2 * i + 1];
        if (blocks.count(wl, wh) === 1) blocks.setWeight(wl, wh, decayFraction);
      }
    }
    return true;
  }

  /** Frees a booking: prefill, blocks, the request. False when unknown. */
  free(id: string): boolean {
    const b = this.byId.get(id);
    if (!b) return false;
    const st = b.rank;
    if (!b.prefillDone) st.prefillTokens -= b.prefillTokens;
    for (let i = 0; i < b.nBlocks; i++) st.blocks.dec(b.words[2 * i], b.words[2 * i + 1]);
    st.requests.delete(id);
    this.byId.delete(id);
    return true;
  }

  /** Frees every booking older than the expiry age (absolute, from admission); returns their ids. */
  expire(): string[] {
    const limit = this.o.clock.now() - this.o.expirySecs * 1000;
    const out: string[] = [];
    for (const b of this.byId.values()) if (b.admittedAt < limit) out.push(b.id);
    for (const id of out) this.free(id);
    return out;
  }

  /** Current load of a rank (zero for an unknown rank). */
  rankLoad(workerId: bigint, dpRank: number): RankLoad { return this.loadOf(rankKey(workerId, dpRank)); }

  /** {@link rankLoad} by `worker:rank` key (the selection path has the key already). */
  loadOf(key: string): RankLoad {
    const st = this.byRank.get(key);
    if (!st) return { activePrefillTokens: 0, activeDecodeBlocks: 0, activeRequests: 0 };
    return {
      activePrefillTokens: st.prefillTokens,
      activeDecodeBlocks: Math.round(st.blocks.weightedSize()),
      activeRequests: st.requests.size,
    };
  }

  /**
   * The contiguous prefix depth of `seq` (word pairs) already active on a rank: how many of the
   * request's blocks would not add to the rank's decode footprint (algorithms §6.4).
   */
  overlapDepth(workerId: bigint, dpRank: number, seq: Uint32Array, nBlocks: number): number {
    return this.depthOf(rankKey(workerId, dpRank), seq, nBlocks);
  }

  /** {@link overlapDepth} by `worker:rank` key. */
  depthOf(key: string, seq: Uint32Array, nBlocks: number): number {
    const st = this.byRank.get(key);
    if (!st || st.blocks.size === 0) return 0;
    let d = 0;
    while (d < nBlocks && st.blocks.has(seq[2 * d], seq[2 * d + 1])) d++;
    return d;
  }

  /** Live booking ids on a rank (inspection, tests). */
  idsOn(workerId: bigint, dpRank: number): string[] {
    const st = this.byRank.get(rankKey(workerId, dpRank));
    return st ? [...st.requests.keys()] : [];
  }
}

/**
 * Active-load accounting of one partition (Dynamo `lib/kv-router/src/sequences/`, Dynamo `lib/kv-router/src/services/selection/core/reservations.rs`): per worker rank the
 * booked requests, their prompt blocks deduplicated by sequence hash (a block shared by several
 * requests counts once), prefill tokens until prefill completes, output blocks (random hashes,
 * never shared) with optional decay weights, and the expiry guard by absolute age.
 *
 * Each rank is a dense row: its numbers live in typed arrays indexed by row (active prefill
 * tokens, live requests; decode blocks in the partition's {@link ActiveBlocks} table), so
 * selection reads every rank's load without a lookup by key or an object per rank. Rows are
 * made by {@link ActiveLoads.addRank} and reused after {@link ActiveLoads.removeRank}; `gen`
 * tells a reused row from the rank that held it before.
 *
 * Tracking hashes arrive as (lo, hi) u32 word pairs (`NormalizedPrompt.seqWords`), so nothing on
 * this path creates a BigInt per block.
 */
import { ActiveBlocks } from './active-blocks.js';
import { TtftModel, outputTokensFromBlocks, type RankState } from './ttft-model.js';
import { rankKeyOf as rankKey, type WorkerRank } from '../index/slots.js';
import type { Clock, Rng } from '../random.js';
import { Waiting, type Waiter } from './waiting.js';

export interface LoadsOptions {
  blockSize: number;
  clock: Clock;
  rng: Rng;
  /** Absolute-age expiry of a booking, seconds (`DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS`). */
  expirySecs: number;
}

/** What a booking adds (AddRequest, Dynamo `lib/kv-router/src/sequences/`). */
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
  /** The rank's `max_num_batched_tokens`, when its record has one (the TTFT model's step budget). */
  stepTokens?: number;
  /** The rank's `max_num_seqs`, when its record has one (the TTFT model's running-request limit). */
  slots?: number;
  /** When the booking was admitted (clock ms); default now. A booking repaired from a replica peer keeps its age, so it expires with the original. */
  admittedAt?: number;
}

/** What a replica peer needs to book the same request again (anti-entropy repair). */
export interface BookingSnapshot {
  /** The prompt's tracking hashes as (lo, hi) words (output blocks, which are local, left out). */
  seq: Uint32Array;
  prefillTokens: number;
  prefillDone: boolean;
  admittedAt: number;
  expectedOutputTokens?: number;
  loraName?: string;
}

/** What a prefill completion reports (see {@link ActiveLoads.prefillComplete}). */
export interface PrefillDone { uncachedTokens: number; bookedAt: number }

/** The current load of one rank (no prompt). */
export interface RankLoad { activePrefillTokens: number; activeDecodeBlocks: number; activeRequests: number }

interface Booking extends Waiter {
  readonly id: string;
  readonly row: number;
  /** Prompt then output hashes, as word pairs (output blocks appended). */
  words: Uint32Array;
  nBlocks: number;
  /** The prompt's blocks (the first of `nBlocks`; output blocks follow). */
  readonly promptBlocks: number;
  prefillTokens: number;
  prefillDone: boolean;
  /** The prompt tokens the rank had not cached (booked or not), until the first prefill completion reports them. */
  uncachedTokens: number;
  /** Context tokens this booking holds on its rank (prompt, then one block per output block). */
  contextTokens: number;
  readonly islTokens: number;
  /** The rank's state when this was booked (what the TTFT model learns from at prefill completion). */
  readonly state: RankState;
  /** Whether prefill_complete came (the first token), whatever the tokens tracked. */
  firstToken: boolean;
  readonly expectedOutputTokens?: number;
  readonly loraName?: string;
}

const ZERO_LOAD: Readonly<RankLoad> = Object.freeze({ activePrefillTokens: 0, activeDecodeBlocks: 0, activeRequests: 0 });

export class ActiveLoads {
  private readonly o: LoadsOptions;
  /** Every rank's blocks (decode accounting and the prefix depth of a prompt). */
  readonly blocks = new ActiveBlocks();
  /** `worker:rank` key -> row, in the order ranks were added. */
  private readonly rows = new Map<string, number>();
  private readonly byId = new Map<string, Booking>();
  private rowWorker: bigint[] = [];
  private rowRank: number[] = [];
  private rowKey: string[] = [];
  private rowRequests: (Map<string, Booking> | null)[] = [];
  private freeRows: number[] = [];
  private cap = 0;
  /** Per row: active prefill tokens. */
  prefill: Float64Array = new Float64Array(0);
  /** Per row: live bookings. */
  requests: Int32Array = new Int32Array(0);
  /** Per row: the live bookings whose `prefill_complete` has not come yet (count, oldest, busy fraction). */
  readonly waiting = new Waiting();
  /** Per row: context tokens the live bookings hold (prompt + output, not deduplicated: each decode reads its own). */
  context: Float64Array = new Float64Array(0);
  /** Per row: bumped each time the row is given to a rank. */
  gen: Uint32Array = new Uint32Array(0);
  /** Bumped whenever a rank is added or removed. */
  epoch = 0;
  /** Time to first token as a function of a rank's state, learned from bookings and their prefill completions. */
  readonly ttftModel = new TtftModel();

  constructor(o: LoadsOptions) { this.o = o; }

  /** Makes sure a rank exists (a schedulable rank reports zero load). */
  addRank(workerId: bigint, dpRank: number): void {
    const k = rankKey(workerId, dpRank);
    if (this.rows.has(k)) return;
    let row: number;
    if (this.freeRows.length > 0) {
      row = this.freeRows.pop() as number;
    } else {
      row = this.rowKey.length;
      this.grow(row + 1);
      this.rowKey.push(k);
      this.rowWorker.push(workerId);
      this.rowRank.push(dpRank);
      this.rowRequests.push(null);
    }
    this.rowKey[row] = k;
    this.rowWorker[row] = workerId;
    this.rowRank[row] = dpRank;
    this.rowRequests[row] = new Map();
    this.prefill[row] = 0;
    this.requests[row] = 0;
    this.waiting.reset(row, this.o.clock.now());
    this.context[row] = 0;
    this.gen[row]++;
    this.blocks.resetRow(row);
    this.rows.set(k, row);
    this.epoch++;
  }

  private grow(rows: number): void {
    if (rows <= this.cap) return;
    let cap = Math.max(16, this.cap);
    while (cap < rows) cap *= 2;
    const p = new Float64Array(cap), r = new Int32Array(cap), g = new Uint32Array(cap), c = new Float64Array(cap);
    p.set(this.prefill);
    r.set(this.requests);
    g.set(this.gen);
    c.set(this.context);
    this.prefill = p;
    this.requests = r;
    this.gen = g;
    this.context = c;
    this.waiting.grow(cap);
    this.cap = cap;
    this.blocks.ensureRows(cap);
  }

  /** Removes a rank and every booking on it; returns the freed ids. */
  removeRank(workerId: bigint, dpRank: number): string[] {
    const k = rankKey(workerId, dpRank);
    const row = this.rows.get(k);
    if (row === undefined) return [];
    const reqs = this.rowRequests[row] as Map<string, Booking>;
    const ids = [...reqs.keys()];
    for (const b of reqs.values()) {
      for (let i = 0; i < b.nBlocks; i++) this.blocks.dec(b.words[2 * i], b.words[2 * i + 1], row);
      this.byId.delete(b.id);
    }
    this.blocks.resetRow(row);
    this.rowRequests[row] = null;
    this.prefill[row] = 0;
    this.requests[row] = 0;
    this.waiting.reset(row, this.o.clock.now());
    this.context[row] = 0;
    this.rows.delete(k);
    this.freeRows.push(row);
    this.epoch++;
    this.ttftModel.removeRank(k);
    return ids;
  }

  /** Every rank known here. */
  ranks(): WorkerRank[] {
    return [...this.rows.values()].map((r) => ({ workerId: this.rowWorker[r], dpRank: this.rowRank[r] }));
  }

  /** The row of a rank, or -1. */
  rowOf(workerId: bigint, dpRank: number): number { return this.rows.get(rankKey(workerId, dpRank)) ?? -1; }

  /** The row of a `worker:rank` key, or -1. */
  rowOfKey(key: string): number { return this.rows.get(key) ?? -1; }

  /** The `worker:rank` key of a live row. */
  keyOf(row: number): string { return this.rowKey[row]; }

  has(id: string): boolean { return this.byId.has(id); }

  /** The rank a booking is on. */
  rankOf(id: string): WorkerRank | undefined {
    const b = this.byId.get(id);
    return b ? { workerId: this.rowWorker[b.row], dpRank: this.rowRank[b.row] } : undefined;
  }

  /** A live booking as a replica peer would book it again (undefined when unknown). */
  snapshot(id: string): BookingSnapshot | undefined {
    const b = this.byId.get(id);
    if (!b) return undefined;
    return {
      seq: b.words.slice(0, 2 * b.promptBlocks), prefillTokens: b.prefillTokens, prefillDone: b.prefillDone, admittedAt: b.admittedAt,
      expectedOutputTokens: b.expectedOutputTokens, loraName: b.loraName,
    };
  }

  /** Whether a live booking still counts its prefill tokens (false when unknown or done). */
  prefillPending(id: string): boolean { return this.byId.get(id)?.prefillDone === false; }

  /** Number of live bookings. */
  get size(): number { return this.byId.size; }

  /**
   * Books a request on a rank (AddRequest). False (nothing changed) for a duplicate id or an
   * unknown rank: bookings never re-create a removed rank.
   */
  book(id: string, workerId: bigint, dpRank: number, input: BookingInput): boolean {
    return this.bookRow(id, this.rowOf(workerId, dpRank), input);
  }

  /** {@link book} on a row (-1: unknown rank). */
  bookRow(id: string, row: number, input: BookingInput): boolean {
    if (this.byId.has(id) || row < 0 || this.rowRequests[row] === null) return false;
    const n = input.nBlocks;
    const words = new Uint32Array(Math.max(4, n * 2));
    words.set(input.seq.subarray(0, n * 2));
    const blocks = this.blocks;
    for (let i = 0; i < n; i++) blocks.inc(words[2 * i], words[2 * i + 1], row);
    const prefill = input.trackPrefillTokens && input.prefillTokens > 0 ? input.prefillTokens : 0;
    const uncached = Math.max(input.prefillTokens, 0), context = Math.max(input.islTokens, 0);
    const now = this.o.clock.now();
    const state: RankState = {
      prefillTokens: uncached, requests: this.requests[row], contextTokens: this.context[row],
      stepTokens: input.stepTokens ?? 0, slots: input.slots ?? 0,
    };
    state.prefillTokens += this.ttftModel.remainingPrefill(this.rowKey[row], this.prefill[row], this.waiting.oldestSecs(row, now), state);
    const b: Booking = {
      id, row, words, nBlocks: n, promptBlocks: n, prefillTokens: prefill, prefillDone: prefill === 0, uncachedTokens: uncached,
      contextTokens: context, islTokens: context, state, firstToken: false, waiting: false,
      admittedAt: input.admittedAt ?? now, expectedOutputTokens: input.expectedOutputTokens, loraName: input.loraName,
    };
    this.prefill[row] += prefill;
    (this.rowRequests[row] as Map<string, Booking>).set(id, b);
    this.requests[row]++;
    this.waiting.add(row, b, now);
    this.context[row] += context;
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
    const now = this.o.clock.now();
    if (!b.prefillDone) {
      this.prefill[b.row] -= b.prefillTokens;
      b.prefillDone = true;
    }
    if (!b.firstToken) {
      this.waiting.done(b.row, b, now);
      b.firstToken = true;
      this.ttftModel.observe(this.rowKey[b.row], b.state, (now - b.admittedAt) / 1000);
    }
    const uncachedTokens = b.uncachedTokens;
    b.uncachedTokens = 0;
    return { uncachedTokens, bookedAt: b.admittedAt };
  }

  /**
   * One more output block (a random, never-shared hash). With `decayFraction`, every block of
   * the request that only this request references gets that weight (Dynamo `lib/kv-router/src/sequences/`).
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
    const blocks = this.blocks, row = b.row;
    b.contextTokens += this.o.blockSize;
    this.context[row] += this.o.blockSize;
    blocks.inc(lo, hi, row);
    if (decayFraction !== undefined) {
      for (let i = 0; i < b.nBlocks; i++) {
        const wl = b.words[2 * i], wh = b.words[2 * i + 1];
        if (blocks.count(wl, wh, row) === 1) blocks.setWeight(wl, wh, row, decayFraction);
      }
    }
    return true;
  }

  /** Frees a booking: prefill, blocks, the request. False when unknown. */
  free(id: string): boolean {
    const b = this.byId.get(id);
    if (!b) return false;
    const row = b.row;
    if (!b.prefillDone) this.prefill[row] -= b.prefillTokens;
    this.waiting.done(row, b, this.o.clock.now());
    this.context[row] -= b.contextTokens;
    // a booking freed before its first token generated nothing to learn from
    if (b.firstToken) this.ttftModel.observeOutput(outputTokensFromBlocks(b.islTokens, b.nBlocks - b.promptBlocks, this.o.blockSize));
    const blocks = this.blocks;
    for (let i = 0; i < b.nBlocks; i++) blocks.dec(b.words[2 * i], b.words[2 * i + 1], row);
    (this.rowRequests[row] as Map<string, Booking>).delete(id);
    this.requests[row]--;
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

  /** {@link rankLoad} by `worker:rank` key. */
  loadOf(key: string): RankLoad {
    const row = this.rows.get(key);
    return row === undefined ? { ...ZERO_LOAD } : this.loadOfRow(row);
  }

  /** {@link rankLoad} of a live row. */
  loadOfRow(row: number): RankLoad {
    return { activePrefillTokens: this.prefill[row], activeDecodeBlocks: this.decodeOf(row), activeRequests: this.requests[row] };
  }

  /** A live row's active decode blocks: its distinct blocks, weighted by decay, rounded. */
  decodeOf(row: number): number { return Math.round(this.blocks.weightedSize(row)); }

  /**
   * The contiguous prefix depth of `seq` (word pairs) already active on a rank: how many of the
   * request's blocks would not add to the rank's decode footprint (Dynamo `lib/kv-router/src/sequences/`).
   */
  overlapDepth(workerId: bigint, dpRank: number, seq: Uint32Array, nBlocks: number): number {
    return this.depthOf(rankKey(workerId, dpRank), seq, nBlocks);
  }

  /** {@link overlapDepth} by `worker:rank` key. */
  depthOf(key: string, seq: Uint32Array, nBlocks: number): number {
    const row = this.rows.get(key);
    if (row === undefined || this.blocks.sizeOf(row) === 0) return 0;
    return this.blocks.depthOn(row, seq, nBlocks);
  }

  /** Live booking ids on a rank (inspection, tests). */
  idsOn(workerId: bigint, dpRank: number): string[] {
    const row = this.rows.get(rankKey(workerId, dpRank));
    return row === undefined ? [] : [...(this.rowRequests[row] as Map<string, Booking>).keys()];
  }
}

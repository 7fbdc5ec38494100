/**
 * The active blocks of one partition: for each (sequence hash, rank row) the number of live
 * bookings of that rank holding the block, and its decay weight (Dynamo `lib/kv-router/src/sequences/block_tracker.rs`), over typed
 * arrays. It replaces one count table per rank with one table per partition so that the holders
 * of a hash can be listed: the blocks of a (hash, row) pair are an entry, the entries of one hash
 * form a doubly linked list, and a second table maps a hash to the head of its list.
 *
 * Why: a request's decode projection needs, per rank, the depth of its prompt's prefix already
 * active there (`overlap_depth`, `lib/kv-router/src/sequences/prompt_registry.rs`). Only a rank that holds the prompt's first hash can have a depth above 0,
 * so the depth pass lists the holders of that one hash (usually none or a few) and walks their
 * prefixes, instead of probing every rank of the partition (8,000 probes at 8,000 ranks).
 *
 * Per row it keeps the distinct blocks held and the weight decay took off them, so a rank's
 * active decode blocks are `round(size - deficit)` with the same floating-point steps as the
 * per-rank table (`U64Counts`) it replaces.
 *
 * Why its own tables and not the `WordTable` the approximate recorder uses: the hash -> head
 * table here keeps no key of its own (it reads the head entry's words), where a WordTable stores
 * and shifts its own copy of every key. Built on two WordTables, a booking's inc + dec of 132
 * blocks measured 25% slower (21.4 against 26.7 µs, 6 runs each, alternating in one process).
 *
 * Hashes arrive as (lo, hi) u32 words; nothing creates a BigInt.
 */

import { grown, mixWords } from '../index/word-table.js';

const NIL = -1;

/** The home cell of a hash (murmur3 finalizer over its two words, as U64Counts mixes them). */
function mixHash(lo: number, hi: number): number {
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The home cell of a (hash, row) pair. */
const mixPair = mixWords;

export class ActiveBlocks {
  // ---- entries: one per held (hash, row), stable ids (a free list reuses them) ----
  private lo: Uint32Array = new Uint32Array(64);
  private hi: Uint32Array = new Uint32Array(64);
  private row: Int32Array = new Int32Array(64);
  private cnt: Uint32Array = new Uint32Array(64);
  private weight: Float64Array = new Float64Array(64);
  /** The previous and next entry of the same hash (the holder list), NIL at the ends. */
  private prev: Int32Array = new Int32Array(64);
  private next: Int32Array = new Int32Array(64);
  private top = 0;
  private freeList = NIL;
  private live = 0;
  // ---- (hash, row) -> entry: open addressing, linear probing, backward-shift deletion ----
  private pairCells: Int32Array = new Int32Array(128).fill(NIL);
  private pairMask = 127;
  // ---- hash -> head entry of its holder list ----
  private headCells: Int32Array = new Int32Array(128).fill(NIL);
  private headMask = 127;
  private heads = 0;
  // ---- per row ----
  /** Distinct blocks each row holds. */
  private size: Float64Array = new Float64Array(16);
  /** Σ (1 - weight) over the row's held blocks: what decay took off `size`. */
  private deficit: Float64Array = new Float64Array(16);

  /** Distinct (hash, row) pairs held. */
  get pairs(): number { return this.live; }

  /** Distinct blocks a row holds. */
  sizeOf(row: number): number { return row < this.size.length ? this.size[row] : 0; }

  /** Σ weights of the row's distinct blocks (its active decode blocks before rounding). */
  weightedSize(row: number): number { return row < this.size.length ? this.size[row] - this.deficit[row] : 0; }

  /** Makes the per-row arrays hold `rows` rows. */
  ensureRows(rows: number): void {
    if (rows <= this.size.length) return;
    let cap = this.size.length;
    while (cap < rows) cap *= 2;
    this.size = grown(this.size, cap);
    this.deficit = grown(this.deficit, cap);
  }

  /** Forgets a row's totals (call once its blocks are gone, before the row is reused). */
  resetRow(row: number): void {
    if (row < this.size.length) { this.size[row] = 0; this.deficit[row] = 0; }
  }

  // ---- lookups ----

  /** The entry of (hash, row), or NIL. */
  private find(lo: number, hi: number, row: number): number {
    const cells = this.pairCells, mask = this.pairMask;
    for (let i = mixPair(lo, hi, row) & mask; ; i = (i + 1) & mask) {
      const e = cells[i];
      if (e === NIL) return NIL;
      if (this.lo[e] === lo && this.hi[e] === hi && this.row[e] === row) return e;
    }
  }

  /** The head entry of a hash's holder list, or NIL. */
  private headOf(lo: number, hi: number): number {
    const cells = this.headCells, mask = this.headMask;
    for (let i = mixHash(lo, hi) & mask; ; i = (i + 1) & mask) {
      const e = cells[i];
      if (e === NIL) return NIL;
      if (this.lo[e] === lo && this.hi[e] === hi) return e;
    }
  }

  /** Live bookings of `row` holding the block (0 when none). */
  count(lo: number, hi: number, row: number): number {
    const e = this.find(lo, hi, row);
    return e === NIL ? 0 : this.cnt[e];
  }

  has(lo: number, hi: number, row: number): boolean { return this.find(lo, hi, row) !== NIL; }

  // ---- changes ----

  /** One more booking of `row` holds the block; returns the row's new count of it. */
  inc(lo: number, hi: number, row: number): number {
    const found = this.find(lo, hi, row);
    if (found !== NIL) return ++this.cnt[found];
    if ((this.live + 1) * 2 > this.pairMask + 1) this.pairCells = this.rehash(this.pairCells, (this.pairMask + 1) * 2, true);
    const e = this.alloc();
    this.lo[e] = lo; this.hi[e] = hi; this.row[e] = row; this.cnt[e] = 1; this.weight[e] = 1;
    this.live++;
    this.place(this.pairCells, this.pairMask = this.pairCells.length - 1, mixPair(lo, hi, row), e);
    // link as the head of the hash's holders
    const head = this.headOf(lo, hi);
    this.prev[e] = NIL;
    this.next[e] = head;
    if (head !== NIL) {
      this.prev[head] = e;
      this.replaceHead(lo, hi, head, e);
    } else {
      if ((this.heads + 1) * 2 > this.headMask + 1) this.headCells = this.rehash(this.headCells, (this.headMask + 1) * 2, false);
      this.headMask = this.headCells.length - 1;
      this.place(this.headCells, this.headMask, mixHash(lo, hi), e);
      this.heads++;
    }
    this.size[row]++;
    return 1;
  }

  /** One booking of `row` lets the block go (no-op when not held); returns the remaining count. */
  dec(lo: number, hi: number, row: number): number {
    const e = this.find(lo, hi, row);
    if (e === NIL) return 0;
    if (--this.cnt[e] > 0) return this.cnt[e];
    this.deficit[row] -= 1 - this.weight[e];
    if (this.deficit[row] < 1e-9) this.deficit[row] = Math.max(0, this.deficit[row]);
    this.size[row]--;
    this.remove(e);
    return 0;
  }

  /** Sets a held block's weight on `row` (decay); no-op when not held. */
  setWeight(lo: number, hi: number, row: number, w: number): void {
    const e = this.find(lo, hi, row);
    if (e === NIL) return;
    this.deficit[row] += this.weight[e] - w;
    this.weight[e] = w;
  }

  // ---- the depth pass ----

  /**
   * For every row holding `seq`'s first hash: the contiguous prefix of `seq` (word pairs, `n`
   * blocks) it holds, written to `depth[row]`; the rows are written to `rows`. Returns how many.
   * Every other row has depth 0. `rows` must hold every row that could hold the hash.
   */
  depths(seq: Uint32Array, n: number, depth: Int32Array, rows: Int32Array): number {
    if (n <= 0) return 0;
    let k = 0;
    for (let e = this.headOf(seq[0], seq[1]); e !== NIL; e = this.next[e]) {
      const r = this.row[e];
      let d = 1;
      while (d < n && this.find(seq[2 * d], seq[2 * d + 1], r) !== NIL) d++;
      depth[r] = d;
      rows[k++] = r;
    }
    return k;
  }

  /** The contiguous prefix of `seq` that one row holds (Dynamo's `overlap_depth`). */
  depthOn(row: number, seq: Uint32Array, n: number): number {
    let d = 0;
    while (d < n && this.find(seq[2 * d], seq[2 * d + 1], row) !== NIL) d++;
    return d;
  }

  /** Live bookings holding a hash, over every row. */
  liveCount(lo: number, hi: number): number {
    let c = 0;
    for (let e = this.headOf(lo, hi); e !== NIL; e = this.next[e]) c += this.cnt[e];
    return c;
  }

  /** How many rows hold a hash. */
  holderCount(lo: number, hi: number): number {
    let c = 0;
    for (let e = this.headOf(lo, hi); e !== NIL; e = this.next[e]) c++;
    return c;
  }

  // ---- internals ----

  private alloc(): number {
    if (this.freeList !== NIL) {
      const e = this.freeList;
      this.freeList = this.next[e];
      return e;
    }
    if (this.top === this.lo.length) this.growEntries();
    return this.top++;
  }

  private growEntries(): void {
    const cap = this.lo.length * 2;
    this.lo = grown(this.lo, cap); this.hi = grown(this.hi, cap); this.cnt = grown(this.cnt, cap);
    this.row = grown(this.row, cap); this.prev = grown(this.prev, cap); this.next = grown(this.next, cap);
    this.weight = grown(this.weight, cap);
  }

  /** Drops entry `e` (count 0): its pair cell, its place in the holder list, its id. */
  private remove(e: number): void {
    const lo = this.lo[e], hi = this.hi[e];
    this.unplace(this.pairCells, this.pairMask, mixPair(lo, hi, this.row[e]), e, true);
    const p = this.prev[e], q = this.next[e];
    if (q !== NIL) this.prev[q] = p;
    if (p !== NIL) this.next[p] = q;
    else if (q !== NIL) this.replaceHead(lo, hi, e, q);
    else {
      this.unplace(this.headCells, this.headMask, mixHash(lo, hi), e, false);
      this.heads--;
    }
    this.live--;
    this.next[e] = this.freeList;
    this.freeList = e;
  }

  /** The head cell of (lo, hi) held `from`; it now holds `to`. */
  private replaceHead(lo: number, hi: number, from: number, to: number): void {
    const cells = this.headCells, mask = this.headMask;
    for (let i = mixHash(lo, hi) & mask; ; i = (i + 1) & mask) {
      if (cells[i] === from) { cells[i] = to; return; }
    }
  }

  private place(cells: Int32Array, mask: number, home: number, e: number): void {
    let i = home & mask;
    while (cells[i] !== NIL) i = (i + 1) & mask;
    cells[i] = e;
  }

  /** Removes the cell holding `e` (found from its home), shifting later cells of the run back. */
  private unplace(cells: Int32Array, mask: number, home: number, e: number, pair: boolean): void {
    let hole = home & mask;
    while (cells[hole] !== e) hole = (hole + 1) & mask;
    for (let j = (hole + 1) & mask; cells[j] !== NIL; j = (j + 1) & mask) {
      const x = cells[j];
      const h = (pair ? mixPair(this.lo[x], this.hi[x], this.row[x]) : mixHash(this.lo[x], this.hi[x])) & mask;
      // move j into the hole when its home is not cyclically in (hole, j]
      const inRange = hole <= j ? h > hole && h <= j : h > hole || h <= j;
      if (inRange) continue;
      cells[hole] = x;
      hole = j;
    }
    cells[hole] = NIL;
  }

  private rehash(old: Int32Array, cap: number, pair: boolean): Int32Array {
    const cells = new Int32Array(cap).fill(NIL);
    const mask = cap - 1;
    for (let i = 0; i < old.length; i++) {
      const e = old[i];
      if (e === NIL) continue;
      this.place(cells, mask, pair ? mixPair(this.lo[e], this.hi[e], this.row[e]) : mixHash(this.lo[e], this.hi[e]), e);
    }
    if (pair) this.pairMask = mask; else this.headMask = mask;
    return cells;
  }
}

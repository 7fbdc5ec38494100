/**
 * A reference-counted set of u64 keys held as (lo, hi) u32 word pairs: open addressing with
 * linear probing and backward-shift deletion, over typed arrays. It is the per-rank block
 * tracker of active-load accounting (Dynamo `lib/kv-router/src/sequences/`): each distinct sequence hash counts once
 * however many requests hold it, and may carry a fractional weight (decaying output blocks).
 *
 * Why not `Map<bigint, ...>`: a booking touches every prompt block (thousands on long prompts);
 * a BigInt per hash plus Map boxing costs ~10x the word-pair probe (bench: `npm run bench -- loads`).
 */

const EMPTY = 0;

export class U64Counts {
  private lo: Uint32Array;
  private hi: Uint32Array;
  /** 0 = empty slot; otherwise the key's reference count. */
  private cnt: Uint32Array;
  /** Weight of a key (1 unless decayed). */
  private weight: Float64Array;
  private mask: number;
  /** Distinct keys held. */
  size = 0;
  /** Σ (1 - weight) over held keys: what decay took off `size`. */
  private deficit = 0;

  constructor(capacity = 16) {
    let cap = 16;
    while (cap < capacity * 2) cap *= 2;
    this.lo = new Uint32Array(cap);
    this.hi = new Uint32Array(cap);
    this.cnt = new Uint32Array(cap);
    this.weight = new Float64Array(cap);
    this.mask = cap - 1;
  }

  /** Σ weights of the distinct keys (the rank's active blocks before rounding). */
  weightedSize(): number { return this.size - this.deficit; }

  private static slotOf(lo: number, hi: number, mask: number): number {
    // murmur3 finalizer over the two words; the keys are already hashes, this only mixes hi in
    let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    return h & mask;
  }

  /** The slot of a key, or -1. */
  private find(lo: number, hi: number): number {
    const mask = this.mask;
    for (let i = U64Counts.slotOf(lo, hi, mask); ; i = (i + 1) & mask) {
      if (this.cnt[i] === EMPTY) return -1;
      if (this.lo[i] === lo && this.hi[i] === hi) return i;
    }
  }

  /** The reference count of a key (0 when absent). */
  count(lo: number, hi: number): number {
    const i = this.find(lo, hi);
    return i < 0 ? 0 : this.cnt[i];
  }

  has(lo: number, hi: number): boolean { return this.find(lo, hi) >= 0; }

  /** Adds one reference; returns the new count. */
  inc(lo: number, hi: number): number {
    if ((this.size + 1) * 4 > (this.mask + 1) * 3) this.grow();
    const mask = this.mask;
    let i = U64Counts.slotOf(lo, hi, mask);
    for (; this.cnt[i] !== EMPTY; i = (i + 1) & mask) {
      if (this.lo[i] === lo && this.hi[i] === hi) return ++this.cnt[i];
    }
    this.lo[i] = lo;
    this.hi[i] = hi;
    this.cnt[i] = 1;
    this.weight[i] = 1;
    this.size++;
    return 1;
  }

  /** Drops one reference (no-op when absent); returns the remaining count. */
  dec(lo: number, hi: number): number {
    const i = this.find(lo, hi);
    if (i < 0) return 0;
    if (--this.cnt[i] > 0) return this.cnt[i];
    this.deficit -= 1 - this.weight[i];
    if (this.deficit < 1e-9) this.deficit = Math.max(0, this.deficit);
    this.size--;
    this.deleteAt(i);
    return 0;
  }

  /** Sets a held key's weight (decay); no-op when absent. */
  setWeight(lo: number, hi: number, w: number): void {
    const i = this.find(lo, hi);
    if (i < 0) return;
    this.deficit += this.weight[i] - w;
    this.weight[i] = w;
  }

  /** Backward-shift deletion keeps probe chains intact without tombstones. */
  private deleteAt(i: number): void {
    const mask = this.mask;
    let hole = i;
    for (let j = (i + 1) & mask; this.cnt[j] !== EMPTY; j = (j + 1) & mask) {
      const home = U64Counts.slotOf(this.lo[j], this.hi[j], mask);
      // move j into the hole when its home is not cyclically in (hole, j]
      const inRange = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (inRange) continue;
      this.lo[hole] = this.lo[j];
      this.hi[hole] = this.hi[j];
      this.cnt[hole] = this.cnt[j];
      this.weight[hole] = this.weight[j];
      hole = j;
    }
    this.cnt[hole] = EMPTY;
  }

  private grow(): void {
    const { lo, hi, cnt, weight } = this;
    const cap = (this.mask + 1) * 2;
    this.lo = new Uint32Array(cap);
    this.hi = new Uint32Array(cap);
    this.cnt = new Uint32Array(cap);
    this.weight = new Float64Array(cap);
    this.mask = cap - 1;
    for (let i = 0; i < cnt.length; i++) {
      if (cnt[i] === EMPTY) continue;
      let j = U64Counts.slotOf(lo[i], hi[i], this.mask);
      while (this.cnt[j] !== EMPTY) j = (j + 1) & this.mask;
      this.lo[j] = lo[i];
      this.hi[j] = hi[i];
      this.cnt[j] = cnt[i];
      this.weight[j] = weight[i];
    }
  }
}

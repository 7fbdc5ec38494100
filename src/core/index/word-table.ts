/**
 * A set of (u64 key as lo/hi u32 words, small integer tag) entries over typed arrays: stable
 * entry ids (a free list reuses them) for callers to keep their own per-entry columns, and an
 * open-addressing table (linear probing, backward-shift deletion, load <= 1/2) from the triple
 * to its id. No BigInt, no string key, no object per entry.
 */

const NIL = -1;

/** The home cell of (lo, hi, tag): the murmur3 finalizer over the mixed words. */
export function mixWords(lo: number, hi: number, tag: number): number {
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1) ^ Math.imul(tag + 1, 0x27d4eb2d), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

export class WordTable {
  lo: Uint32Array = new Uint32Array(64);
  hi: Uint32Array = new Uint32Array(64);
  tag: Int32Array = new Int32Array(64);
  /** Free-list links of released ids. */
  private link: Int32Array = new Int32Array(64);
  private top = 0;
  private freeList = NIL;
  private live = 0;
  private cells: Int32Array = new Int32Array(128).fill(NIL);
  private mask = 127;
  /** Set by {@link findOrAdd}: whether the entry is new. */
  added = false;

  /** Live entries. */
  get size(): number { return this.live; }

  /** The length of the entry arrays (ids are below it). */
  get capacity(): number { return this.lo.length; }

  /** The entry of (lo, hi, tag), or -1. */
  find(lo: number, hi: number, tag: number): number {
    const cells = this.cells, mask = this.mask;
    for (let i = mixWords(lo, hi, tag) & mask; ; i = (i + 1) & mask) {
      const e = cells[i];
      if (e === NIL) return NIL;
      if (this.lo[e] === lo && this.hi[e] === hi && this.tag[e] === tag) return e;
    }
  }

  /** The entry of (lo, hi, tag), made when absent ({@link added} tells which). */
  findOrAdd(lo: number, hi: number, tag: number): number {
    const found = this.find(lo, hi, tag);
    this.added = found === NIL;
    if (found !== NIL) return found;
    if ((this.live + 1) * 2 > this.mask + 1) this.rehash((this.mask + 1) * 2);
    let e: number;
    if (this.freeList !== NIL) {
      e = this.freeList;
      this.freeList = this.link[e];
    } else {
      if (this.top === this.lo.length) this.growEntries();
      e = this.top++;
    }
    this.lo[e] = lo; this.hi[e] = hi; this.tag[e] = tag;
    const cells = this.cells, mask = this.mask;
    let i = mixWords(lo, hi, tag) & mask;
    while (cells[i] !== NIL) i = (i + 1) & mask;
    cells[i] = e;
    this.live++;
    return e;
  }

  /** Releases a live entry (its id may be reused by the next add). */
  remove(e: number): void {
    const cells = this.cells, mask = this.mask;
    let hole = mixWords(this.lo[e], this.hi[e], this.tag[e]) & mask;
    while (cells[hole] !== e) hole = (hole + 1) & mask;
    for (let j = (hole + 1) & mask; cells[j] !== NIL; j = (j + 1) & mask) {
      const x = cells[j];
      const h = mixWords(this.lo[x], this.hi[x], this.tag[x]) & mask;
      // move j into the hole when its home is not cyclically in (hole, j]
      const inRange = hole <= j ? h > hole && h <= j : h > hole || h <= j;
      if (inRange) continue;
      cells[hole] = x;
      hole = j;
    }
    cells[hole] = NIL;
    this.live--;
    this.link[e] = this.freeList;
    this.freeList = e;
  }

  private growEntries(): void {
    const cap = this.lo.length * 2;
    this.lo = grown(this.lo, cap); this.hi = grown(this.hi, cap);
    this.tag = grown(this.tag, cap); this.link = grown(this.link, cap);
  }

  private rehash(cap: number): void {
    const old = this.cells;
    const cells = new Int32Array(cap).fill(NIL);
    const mask = cap - 1;
    for (let k = 0; k < old.length; k++) {
      const e = old[k];
      if (e === NIL) continue;
      let i = mixWords(this.lo[e], this.hi[e], this.tag[e]) & mask;
      while (cells[i] !== NIL) i = (i + 1) & mask;
      cells[i] = e;
    }
    this.cells = cells;
    this.mask = mask;
  }
}

/** A copy of a typed array with room for `cap` elements (entry columns grow with a table). */
export function grown<T extends Uint32Array | Int32Array | Float64Array>(a: T, cap: number): T {
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a);
  return b;
}

/**
 * An engine's prefix cache (one per simulated worker rank): the KV blocks it holds by numeric
 * block key, reference-counted by the running requests that use them, with the unreferenced
 * ones in least-recently-used order for eviction. Capacity counts held prompt blocks plus the
 * output blocks of running requests (generated tokens occupy KV too, but their hashes never
 * recur in the trace, so they are not cached).
 *
 * Eviction is always leaf-first, so the engine never holds a block whose parent it dropped
 * (what the router's index sees then equals what the engine can hit): a request references a
 * whole root-aligned chain, and {@link PrefixCache.release} returns it to the LRU leaf first, so
 * a parent is never less recent than its children; a pinned child has a pinned parent.
 */

export class PrefixCache {
  /** Held blocks: key -> number of running requests referencing it. */
  private readonly refs = new Map<number, number>();
  /** Unreferenced held blocks, least recently used first (Set iteration is insertion order). */
  private readonly lru = new Set<number>();
  /** KV blocks taken by output tokens of running requests. */
  private outputBlocks = 0;
  /** Blocks evicted so far. */
  evicted = 0;

  /** @param capacity blocks of KV (Infinity = unbounded). */
  constructor(readonly capacity: number) {}

  /** Blocks in use (held prompt blocks + output blocks). */
  get used(): number { return this.refs.size + this.outputBlocks; }

  /** Whether the engine holds `key`. */
  has(key: number): boolean { return this.refs.has(key); }

  /** Length of the longest held prefix of `keys`. */
  matchPrefix(keys: readonly number[]): number {
    let k = 0;
    while (k < keys.length && this.refs.has(keys[k])) k++;
    return k;
  }

  /**
   * A request starts using `keys` (root first): held ones are pinned, missing ones are added
   * pinned, after evicting LRU blocks to make room. Returns the evicted keys (to announce as
   * Removed) — possibly fewer than needed when everything left is pinned (the engine then runs
   * over capacity rather than preempt).
   */
  acquire(keys: readonly number[]): number[] {
    let missing = 0;
    // pin the held ones first, so making room never evicts what this request hits
    for (const k of keys) {
      const r = this.refs.get(k);
      if (r === undefined) { missing++; continue; }
      if (r === 0) this.lru.delete(k);
      this.refs.set(k, r + 1);
    }
    const evicted = this.makeRoom(missing);
    for (const k of keys) if (!this.refs.has(k)) this.refs.set(k, 1);
    return evicted;
  }

  /** A running request grew by one output block; returns evicted keys. */
  addOutputBlock(): number[] {
    const evicted = this.makeRoom(1);
    this.outputBlocks++;
    return evicted;
  }

  /** A request finished: unpin `keys` (leaf first into the LRU) and free its output blocks. */
  release(keys: readonly number[], outputBlocks: number): void {
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i];
      const r = this.refs.get(k) as number;
      this.refs.set(k, r - 1);
      if (r === 1) this.lru.add(k);
    }
    this.outputBlocks -= outputBlocks;
  }

  private makeRoom(need: number): number[] {
    const out: number[] = [];
    let excess = this.used + need - this.capacity;
    if (excess <= 0) return out;
    for (const k of this.lru) {
      if (excess-- <= 0) break;
      out.push(k);
    }
    for (const k of out) { this.lru.delete(k); this.refs.delete(k); }
    this.evicted += out.length;
    return out;
  }
}

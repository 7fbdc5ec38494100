/**
 * One simulated rank's KV memory with prefix caching, after vLLM's block pool
 * (vllm/v1/core/block_pool.py, kv_cache_manager.py): `capacity` blocks, each either free,
 * held by running requests (reference-counted, shared prefixes count once) or cached and
 * evictable (reference count 0, least recently released first). A cached block is addressed
 * by its key, which names its whole prefix, so a lookup is a walk from the root.
 *
 * A block is *hashed* (visible to lookups and announced as a KV event) once its tokens are all
 * known: prompt blocks when they are allocated (the trace's last, partial prompt block counts as
 * a unit, as in the trace), generated blocks when they fill. A generated block released before
 * it filled is freed outright. Eviction is leaf first: a request releases its chain from the
 * tail and any request that holds a block also holds its prefix, so a parent is never less
 * recently used than its children and the engine never holds a block whose parent it dropped.
 *
 * Deviation from vLLM: a free block is taken before any cached one is evicted (vLLM's free
 * queue mixes never-used and cached blocks in release order), and a prompt block whose key is
 * already cached is shared instead of computed into a duplicate block.
 */
export class KvCache {
  /** Blocks in memory (held or cached): key -> number of running requests holding it. */
  private readonly refs = new Map<number, number>();
  /** Cached, unreferenced blocks, least recently released first (Set order is insertion order). */
  private readonly lru = new Set<number>();
  /** Held blocks not hashed yet (generated blocks still filling). */
  private readonly unhashed = new Set<number>();
  /** Blocks evicted so far. */
  evicted = 0;

  /** @param capacity blocks of KV (Infinity = unbounded). */
  constructor(readonly capacity: number) {}

  /** Blocks in memory (held + cached). */
  get used(): number { return this.refs.size; }
  /** Blocks held by running requests. */
  get held(): number { return this.refs.size - this.lru.size; }
  /** Blocks an allocation can take: free ones plus evictable cached ones. */
  get available(): number { return this.capacity - this.refs.size + this.lru.size; }

  /** Whether `key` is hashed in memory (a lookup would hit it). */
  has(key: number): boolean { return this.refs.has(key) && !this.unhashed.has(key); }

  /** Whether `key` is cached with no holder (touching it takes one available block). */
  isEvictable(key: number): boolean { return this.lru.has(key); }

  /** What holding `key` costs in available blocks: 1 if it must be allocated or leaves the LRU, else 0. */
  cost(key: number): number { return !this.refs.has(key) || this.lru.has(key) ? 1 : 0; }

  /** Length of the longest hashed prefix of `keys` (at most `max` blocks). */
  matchPrefix(keys: readonly number[], max = keys.length): number {
    let k = 0;
    while (k < max && this.has(keys[k])) k++;
    return k;
  }

  /**
   * Hold `key`: a cached block is shared (leaving the LRU when it had no holder); a missing one
   * is allocated, evicting the least recently released cached block when memory is full (its
   * key is appended to `evicted`). Returns true when the block was allocated (it is new).
   * The caller has checked {@link available} against the summed {@link cost}.
   */
  hold(key: number, hashed: boolean, evicted: number[]): boolean {
    const r = this.refs.get(key);
    if (r !== undefined) {
      if (r === 0) this.lru.delete(key);
      this.refs.set(key, r + 1);
      return false;
    }
    if (this.refs.size >= this.capacity) {
      const victim = this.lru.values().next().value as number;
      this.lru.delete(victim);
      this.refs.delete(victim);
      this.evicted++;
      evicted.push(victim);
    }
    this.refs.set(key, 1);
    if (!hashed) this.unhashed.add(key);
    return true;
  }

  /** A held generated block filled: it becomes visible and cacheable. */
  hash(key: number): void { this.unhashed.delete(key); }

  /** Whether a held block is still unhashed. */
  isUnhashed(key: number): boolean { return this.unhashed.has(key); }

  /** Release one hold of `key`: the last one caches a hashed block (LRU tail) and frees an unhashed one. */
  release(key: number): void {
    const r = this.refs.get(key) as number;
    if (r > 1) { this.refs.set(key, r - 1); return; }
    if (this.unhashed.delete(key)) { this.refs.delete(key); return; }
    this.refs.set(key, 0);
    this.lru.add(key);
  }
}

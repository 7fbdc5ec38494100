/**
 * A multi-tenant tree of routed prompts over token blocks: Ray Serve LLM's `PrefixTree`
 * (ray-project/ray, `python/ray/llm/_internal/serve/routing_policies/prefix_aware/prefix_tree.py`,
 * read in the Ray 2.58.0 wheel and at ray-project/ray@19a1eaa35d84e17c62a759ce6ab92fa1919723d2),
 * whose tenants are replicas and whose text is characters, rebuilt on the prompt's chained block
 * hashes (`prefixWords`).
 *
 * Ray keeps a radix tree of characters; each node records, per tenant, when the tenant last
 * inserted text through it, and each tenant has an LRU list of its nodes. Here a node is one
 * block of a prompt prefix, keyed by its chained hash: entry i of `prefixWords` names the prefix
 * of i + 1 blocks, so a flat map from key to owners is the tree (a parent is the entry before).
 * What Ray's compression changes is only where nodes split, and a radix node's tenants own all of
 * its text (an insert splits a node where it diverges), so matching gives the same tenants and the
 * same matched length, in blocks instead of characters. A tenant's "char count" is the number of
 * blocks it owns.
 *
 * As in Ray, each (block, tenant) ownership is one record in the tenant's doubly linked LRU list
 * with the time of its last insert. An insert touches the path root first, moving each record to
 * the newest end in turn as Ray moves each node to the head, so every list is sorted by time and
 * Ray's eviction (remove the oldest time's blocks together, repeat until enough is gone) reads
 * from the oldest end. (A `Map` in recency order, touched by delete and re-add, cost 17% of a
 * simulation in rehashing plus 13% in garbage collection; relinking a record allocates nothing.)
 *
 * Keys are 53 bits of the 64-bit chained hash (`(hi & 0x1fffff) * 2^32 + lo`). Two prefixes that
 * share a key share a node: with the tree's default bound of {@link MAX_OWNED_BLOCKS} entries the
 * chance that any two of them collide is below (2^19)^2 / 2 / 2^53 = 2^-16, and a collision can
 * only make one match longer or shorter, i.e. change a routing choice, never the service's
 * accounting or its KV index.
 */

/**
 * Hard bound on (block, tenant) entries per tree (per partition): 8.4 M routed tokens at block
 * size 16, ~64 MB at the ~125 bytes an entry measured in Node 22 (8 tenants, distinct prompts).
 */
export const MAX_OWNED_BLOCKS = 1 << 19;

/** One tenant (a replica: a worker rank) and its LRU list. */
export interface Tenant {
  readonly id: string;
  /** Blocks owned (Ray's `tenant_to_char_count`, in blocks). */
  size: number;
  oldest: Entry | null;
  newest: Entry | null;
  /** Scratch: equal to the tree's current mark while the tenant is a candidate of a match. */
  mark: number;
}

/** One block owned by one tenant: a record of the tenant's LRU list. */
interface Entry {
  readonly tenant: Tenant;
  readonly key: number;
  time: number;
  older: Entry | null;
  newer: Entry | null;
}

/** Owners of one block: one entry (most blocks), or several. */
type Owners = Entry | Entry[];

const entryOf = (o: Owners, t: Tenant): Entry | undefined => {
  if (!Array.isArray(o)) return o.tenant === t ? o : undefined;
  for (const e of o) if (e.tenant === t) return e;
  return undefined;
};

/** The key of block `i` of `words` ((lo, hi) u32 pairs). */
export const blockKey = (words: Uint32Array, i: number): number => (words[2 * i + 1] & 0x1fffff) * 4294967296 + words[2 * i];

/** The result of {@link RoutedPrefixTree.match}. */
export interface TreeMatch {
  /** Blocks of the prompt matched (Ray: `len(matched_text)`, in blocks). */
  blocks: number;
  /** Positions in `candidates` of those owning the deepest matched block, in order (all when 0 blocks matched). */
  owners: number[];
}

function unlink(e: Entry): void {
  const t = e.tenant;
  if (e.older) e.older.newer = e.newer; else t.oldest = e.newer;
  if (e.newer) e.newer.older = e.older; else t.newest = e.older;
  e.older = e.newer = null;
}

function linkNewest(e: Entry): void {
  const t = e.tenant;
  e.older = t.newest;
  e.newer = null;
  if (t.newest) t.newest.newer = e; else t.oldest = e;
  t.newest = e;
}

export class RoutedPrefixTree {
  /** What the bound evicts down to (0.9 of it, as Ray's default target is 0.9 of its threshold). */
  readonly #boundTarget: number;
  readonly #owners = new Map<number, Owners>();
  readonly #tenants = new Map<string, Tenant>();
  #entries = 0;
  #mark = 0;
  /** Entries the hard bound evicted (beyond what Ray's own eviction did). */
  boundEvicted = 0;

  /** A tree of at most `maxEntries` (block, tenant) entries. */
  constructor(readonly maxEntries: number = MAX_OWNED_BLOCKS) {
    this.#boundTarget = Math.floor(maxEntries * 0.9);
  }

  /** (block, tenant) entries held: every tenant's block count summed. */
  get entries(): number { return this.#entries; }
  get tenantCount(): number { return this.#tenants.size; }
  tenant(id: string): Tenant | undefined { return this.#tenants.get(id); }

  /** Ray `add_tenants`: the tenant, created empty if new (it then owns only the root). */
  addTenant(id: string): Tenant {
    let t = this.#tenants.get(id);
    if (t === undefined) {
      t = { id, size: 0, oldest: null, newest: null, mark: 0 };
      this.#tenants.set(id, t);
    }
    return t;
  }

  /** Ray `remove_tenants`: drops the tenant and every block it owns; returns the blocks removed. */
  removeTenant(id: string): number {
    const t = this.#tenants.get(id);
    if (t === undefined) return 0;
    const n = t.size;
    while (t.oldest !== null) this.#remove(t.oldest);
    this.#tenants.delete(id);
    return n;
  }

  /**
   * Ray `insert(text, tenant, time_s)`: `nBlocks` blocks of `words` for `t`, each touched at
   * `now`, root first. Then, past `maxEntries`, evicts as Ray does from the tenant holding most
   * until 0.9 of the bound (Ray itself has no bound when its eviction is off).
   */
  insert(t: Tenant, words: Uint32Array, nBlocks: number, now: number): void {
    for (let i = 0; i < nBlocks; i++) {
      const key = blockKey(words, i);
      const o = this.#owners.get(key);
      let e = o === undefined ? undefined : entryOf(o, t);
      if (e !== undefined) {
        unlink(e);
      } else {
        e = { tenant: t, key, time: now, older: null, newer: null };
        if (o === undefined) this.#owners.set(key, e);
        else if (Array.isArray(o)) o.push(e);
        else this.#owners.set(key, [o, e]);
        t.size++;
        this.#entries++;
      }
      e.time = now;
      linkNewest(e);
    }
    if (this.#entries > this.maxEntries) this.#enforceBound();
  }

  /**
   * Ray `prefix_match(text, available_tenants)`: walks the prompt's blocks while some candidate
   * owns the next one; returns the blocks matched and which candidates own the deepest of them.
   * `candidates` are tenants of this tree (callers add them first, as Ray adds every replica).
   */
  match(words: Uint32Array, nBlocks: number, candidates: readonly Tenant[]): TreeMatch {
    const mark = ++this.#mark;
    for (const c of candidates) c.mark = mark;
    let blocks = 0;
    let last: Owners | undefined;
    for (; blocks < nBlocks; blocks++) {
      const o = this.#owners.get(blockKey(words, blocks));
      if (o === undefined) break;
      if (Array.isArray(o) ? !o.some((e) => e.tenant.mark === mark) : o.tenant.mark !== mark) break;
      last = o;
    }
    const owners: number[] = [];
    // 0 blocks: the root, which every tenant owns
    for (let i = 0; i < candidates.length; i++) if (last === undefined || entryOf(last, candidates[i]) !== undefined) owners.push(i);
    return { blocks, owners };
  }

  /**
   * Ray `evict_tenant_by_lru(tenant, min_remove_size)`: removes `t`'s least recently inserted
   * blocks, all blocks of one insert time together, until at least `minBlocks` are gone (or all
   * of them); returns the blocks removed.
   */
  evictLru(t: Tenant, minBlocks: number): number {
    const min = Math.min(minBlocks, t.size);
    let removed = 0;
    while (removed < min && t.oldest !== null) {
      const time = t.oldest.time;
      while (t.oldest !== null && t.oldest.time === time) { this.#remove(t.oldest); removed++; }
    }
    return removed;
  }

  /**
   * One turn of Ray's eviction loop (`_run_eviction_loop`): every tenant holding more than
   * `thresholdBlocks` loses at least its excess over `targetBlocks`.
   */
  evictionPass(thresholdBlocks: number, targetBlocks: number): number {
    let removed = 0;
    for (const t of this.#tenants.values()) {
      if (t.size > thresholdBlocks) removed += this.evictLru(t, t.size - targetBlocks);
    }
    return removed;
  }

  #enforceBound(): void {
    while (this.#entries > this.#boundTarget) {
      let largest: Tenant | undefined;
      for (const t of this.#tenants.values()) if (largest === undefined || t.size > largest.size) largest = t;
      if (largest === undefined || largest.size === 0) return;
      this.boundEvicted += this.evictLru(largest, this.#entries - this.#boundTarget);
    }
  }

  /** Removes `e` from its tenant's list and its block's owners (the node goes with its last owner, as in Ray). */
  #remove(e: Entry): void {
    unlink(e);
    e.tenant.size--;
    this.#entries--;
    const o = this.#owners.get(e.key);
    if (o === undefined) return;
    if (!Array.isArray(o)) {
      if (o === e) this.#owners.delete(e.key);
      return;
    }
    const i = o.indexOf(e);
    if (i < 0) return;
    o[i] = o[o.length - 1];
    o.pop();
    if (o.length === 1) this.#owners.set(e.key, o[0]);
  }
}

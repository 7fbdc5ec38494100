/**
 * SGLang's approximate prefix tree of routed prompts, on KV blocks: a port of the router's
 * `TokenTree` (lightseekorg/smg `crates/kv_index/src/token_tree.rs` at 73da68ca, 2026-08-07; the
 * SGLang Model Gateway moved there from sgl-project/sglang `sgl-model-gateway/`), the tree its
 * `cache_aware` policy keeps for tokenized requests. That tree is page-aligned (pages of 16
 * tokens, "matching SGLang's radix cache"): here a page is one KV block of the partition, keyed
 * by the block's chained tracking hash, so an equal key at depth i means an equal prefix of i + 1
 * blocks, exactly what the source's page comparison along a path establishes.
 *
 * One radix tree per partition, shared by every tenant (a tenant is one `(worker, dp_rank)`, a
 * worker URL of SGLang's `--dp-aware` mode). Each node holds a run of block keys and, per tenant
 * that routed a prompt through it, the tick of its last access. What the source does, kept here:
 * - insert touches the tenant on every node of the path (a fresh tick each) and counts the
 *   tenant's size in blocks; like the source, a full-match node adds its length again even when
 *   the tenant already held it (`tokens_added += advance`), so a tenant's count grows with repeated
 *   prompts and overstates what it holds;
 * - a match descends while whole nodes match, stopping inside a node or at a node no tenant holds
 *   any more; the tenant of the longest match is the deepest matched node's cached last tenant
 *   when it still holds the node, else its first tenant (`get_any_tenant`); the match touches that
 *   tenant on each matched node, and a touch whose tick is a multiple of 16 makes the toucher the
 *   node's cached tenant;
 * - eviction (`evict_tenant`), per tenant over its limit: its leaves (nodes it holds that no child
 *   of it holds) by oldest tick, then collection order, removed one by one until the removed
 *   blocks reach the excess; emptied nodes are unlinked upward, and only a parent reached that way
 *   is queued as a new leaf (a leaf shared with another tenant stays linked, so its parent is not).
 * Ticks come from one counter per tree (the source's is one per process); node creation takes a
 * tick as in the source (`Node::new`), so the 1-in-16 pattern matches a single-tree process.
 *
 * Keys: `(hi & 0x1fffff) * 2**32 + lo` of a block's 64-bit tracking hash, 53 bits so a key is an
 * exact JS number. Two different prefixes that collide merge in this tree: a request may then be
 * sent where its prefix is not cached, the same kind of error the approximate tree makes anyway
 * (it guesses engine caches from routing history); at 2^-53 per pair it does not happen in practice.
 * Isomorphic: no `node:` imports.
 */

/** One node: a run of block keys (an edge) and its tenants' last-access ticks. */
interface Node {
  keys: Float64Array;
  readonly children: Map<number, Node>;
  /** tenant -> tick of its last access (insertion order is the "first tenant" order). */
  tenants: Map<string, number>;
  lastTenant: string | null;
  parent: Node | null;
}

/** The longest match: the tenant that holds it (null: none) and its length in blocks. */
export interface TreeMatch { readonly tenant: string | null; readonly blocks: number }

const newNode = (keys: Float64Array, parent: Node | null): Node => ({ keys, children: new Map(), tenants: new Map(), lastTenant: null, parent });

/** The prompt's block keys from its (lo, hi) tracking-hash words. */
export function blockKeys(words: Uint32Array): Float64Array {
  const n = words.length >>> 1, keys = new Float64Array(n);
  for (let i = 0; i < n; i++) keys[i] = (words[2 * i + 1] & 0x1fffff) * 2 ** 32 + words[2 * i];
  return keys;
}

/** Blocks of `node` equal to `keys` from `pos` (at least 1 when the first key matched). */
function shared(node: Node, keys: Float64Array, pos: number): number {
  const k = node.keys, n = Math.min(k.length, keys.length - pos);
  let i = 0;
  while (i < n && k[i] === keys[pos + i]) i++;
  return i;
}

export class TokenTree {
  readonly #root: Node = newNode(new Float64Array(0), null);
  /** Blocks counted per tenant (the source's `tenant_token_count`, in blocks). */
  readonly #count = new Map<string, number>();
  #tick = 0;

  /** Tenants with a size entry, and that size in blocks (as the source counts it). */
  sizes(): ReadonlyMap<string, number> { return this.#count; }

  /** Blocks the tree stores (nodes' edge lengths), for tests and bounds. */
  storedBlocks(): number {
    let n = 0;
    const stack = [...this.#root.children.values()];
    for (let node = stack.pop(); node; node = stack.pop()) { n += node.keys.length; stack.push(...node.children.values()); }
    return n;
  }

  /** The tenants holding the node `keys` ends in, with their ticks (tests). */
  tenantsAt(keys: Float64Array): ReadonlyMap<string, number> | undefined {
    let node = this.#root, pos = 0;
    while (pos < keys.length) {
      const child = node.children.get(keys[pos]);
      if (!child || shared(child, keys, pos) !== child.keys.length) return undefined;
      pos += child.keys.length;
      node = child;
    }
    return node.tenants;
  }

  #newNode(keys: Float64Array, parent: Node): Node { this.#tick++; return newNode(keys, parent); } // Node::new takes a tick

  #touch(node: Node, tenant: string): void {
    const ts = this.#tick++;
    node.tenants.set(tenant, ts);
    if ((ts & 0xf) === 0) node.lastTenant = tenant;
  }

  static #anyTenant(node: Node): string | null {
    if (node.lastTenant !== null && node.tenants.has(node.lastTenant)) return node.lastTenant;
    for (const t of node.tenants.keys()) return t;
    return null;
  }

  /** The longest match of `keys` without touching anything (`match_prefix_with_counts` less its touches). */
  match(keys: Float64Array): TreeMatch {
    if (keys.length === 0) return { tenant: TokenTree.#anyTenant(this.#root), blocks: 0 };
    let node = this.#root, pos = 0, blocks = 0, tenant: string | null = null;
    while (pos < keys.length) {
      const child = node.children.get(keys[pos]);
      if (!child) break;
      const t = TokenTree.#anyTenant(child);
      if (t === null) break;
      const m = shared(child, keys, pos);
      blocks += m;
      tenant = t;
      if (m < child.keys.length) break;
      pos += m;
      node = child;
    }
    return { tenant, blocks };
  }

  /**
   * `match_and_insert_with`: the match (touching the matched tenant on each matched node), then,
   * when `tenant` is not null, the insert of `keys` for it. Returns the match.
   */
  matchAndInsert(keys: Float64Array, tenant: string | null): TreeMatch {
    if (keys.length === 0) return { tenant: TokenTree.#anyTenant(this.#root), blocks: 0 };
    let node = this.#root, pos = 0, blocks = 0, found: string | null = null, frozen = false;
    const path: Node[] = [];
    while (pos < keys.length) {
      const child = node.children.get(keys[pos]);
      if (!child) break;
      const m = shared(child, keys, pos);
      if (m < child.keys.length) { // the match stops inside this node; the insert splits it
        const t = frozen ? null : TokenTree.#anyTenant(child);
        if (t !== null) { this.#touch(child, t); blocks += m; found = t; }
        break;
      }
      if (!frozen) {
        const t = TokenTree.#anyTenant(child);
        if (t === null) frozen = true; // all evicted here: the match stops, the insert goes on
        else { this.#touch(child, t); blocks += m; found = t; }
      }
      path.push(child);
      pos += m;
      node = child;
    }
    if (tenant !== null) {
      this.#register(tenant);
      let added = 0;
      for (const p of path) { this.#touch(p, tenant); added += p.keys.length; }
      if (pos < keys.length) added += this.#insertFrom(node, keys, pos, tenant);
      this.#add(tenant, added);
    }
    return { tenant: found, blocks };
  }

  /** `insert_tokens`: records that `keys` was routed to `tenant`. */
  insert(keys: Float64Array, tenant: string): void {
    if (keys.length === 0) return;
    this.#register(tenant);
    this.#add(tenant, this.#insertFrom(this.#root, keys, 0, tenant));
  }

  #register(tenant: string): void {
    if (!this.#root.tenants.has(tenant)) this.#root.tenants.set(tenant, 0);
    if (!this.#count.has(tenant)) this.#count.set(tenant, 0);
  }

  #add(tenant: string, blocks: number): void {
    if (blocks > 0) this.#count.set(tenant, (this.#count.get(tenant) ?? 0) + blocks);
  }

  /** `insert_from`: descends from `node` inserting `keys[pos..]`; returns the blocks to count. */
  #insertFrom(node: Node, keys: Float64Array, pos: number, tenant: string): number {
    let added = 0;
    while (pos < keys.length) {
      const first = keys[pos], child = node.children.get(first);
      if (!child) {
        const leaf = this.#newNode(keys.slice(pos), node);
        this.#touch(leaf, tenant);
        node.children.set(first, leaf);
        return added + keys.length - pos;
      }
      const common = shared(child, keys, pos), rest = keys.length - pos;
      if (common === child.keys.length) {
        this.#touch(child, tenant);
        added += common; // counted even when the tenant held it already (as the source does)
        pos += common;
        node = child;
        continue;
      }
      // split: a new node takes the common part and the child's tenants, ticks and cached tenant
      const owned = child.tenants.has(tenant);
      const mid: Node = { keys: child.keys.slice(0, common), children: new Map(), tenants: new Map(child.tenants), lastTenant: child.lastTenant, parent: node };
      child.keys = child.keys.slice(common);
      child.parent = mid;
      mid.children.set(child.keys[0], child);
      let branch = 0;
      if (common < rest) { // the prompt goes on past the split: a new leaf for the rest
        const leaf = this.#newNode(keys.slice(pos + common), mid);
        this.#touch(leaf, tenant);
        mid.children.set(leaf.keys[0], leaf);
        branch = rest - common;
      }
      node.children.set(first, mid);
      this.#touch(mid, tenant);
      return added + branch + (owned ? 0 : common);
    }
    return added;
  }

  /** `evict_tenant_by_size`: every tenant counted above `maxBlocks` is evicted down to it. */
  evictBySize(maxBlocks: number): void {
    for (const [tenant, n] of [...this.#count]) if (n > maxBlocks) this.evictTenant(tenant, maxBlocks);
  }

  /** `evict_tenant`: removes `tenant`'s least recently used leaves until its count is `maxBlocks`. */
  evictTenant(tenant: string, maxBlocks: number): void {
    const current = this.#count.get(tenant) ?? 0;
    if (current <= maxBlocks) return;
    const toEvict = current - maxBlocks;
    const heap = new LeafHeap();
    this.#collectLeaves(this.#root, tenant, heap);
    let evicted = 0;
    while (evicted < toEvict) {
      const node = heap.pop();
      if (node === undefined) break;
      if (!node.tenants.delete(tenant)) continue;
      evicted += node.keys.length;
      const promoted = this.#cleanup(node, tenant);
      if (promoted) heap.push(promoted, promoted.tenants.get(tenant) ?? 0);
    }
    this.#count.set(tenant, Math.max(0, current - evicted));
  }

  /** Post-order, children in insertion order: the source's `collect_tenant_leaves` (root excluded). */
  #collectLeaves(node: Node, tenant: string, heap: LeafHeap): void {
    let childHas = false;
    for (const c of node.children.values()) {
      if (c.tenants.has(tenant)) childHas = true;
      this.#collectLeaves(c, tenant, heap);
    }
    const ts = node.tenants.get(tenant);
    if (node !== this.#root && ts !== undefined && !childHas) heap.push(node, ts);
  }

  static #isLeafOf(node: Node, tenant: string): boolean {
    if (!node.tenants.has(tenant)) return false;
    for (const c of node.children.values()) if (c.tenants.has(tenant)) return false;
    return true;
  }

  /** `cleanup_empty_ancestors_with_parent`: unlinks emptied nodes upward; returns a node that became `tenant`'s leaf. */
  #cleanup(node: Node, tenant: string): Node | null {
    let cur = node, promoted: Node | null = null;
    for (;;) {
      if (cur.tenants.size > 0 || cur.children.size > 0) {
        if (promoted === null && TokenTree.#isLeafOf(cur, tenant)) promoted = cur;
        return promoted;
      }
      const parent = cur.parent;
      if (parent === null) return promoted;
      parent.children.delete(cur.keys[0]);
      if (promoted === null && TokenTree.#isLeafOf(parent, tenant)) promoted = parent;
      cur = parent;
    }
  }

  /**
   * Forgets `tenant` everywhere (a rank that left). Not the source's current behaviour (its
   * `remove_worker` is a no-op that leaves the entries to eviction) but SGLang's own repository's
   * `remove_tenant`: it keeps the tree bounded when workers come and go.
   */
  removeTenant(tenant: string): void {
    const strip = (node: Node): void => {
      node.tenants.delete(tenant);
      for (const [k, c] of [...node.children]) {
        strip(c);
        if (c.tenants.size === 0 && c.children.size === 0) node.children.delete(k);
      }
    };
    strip(this.#root);
    this.#count.delete(tenant);
  }
}

/** A binary min-heap of leaves by (tick, push order): the source's `BinaryHeap<Reverse<((ts, 0), idx)>>`. */
class LeafHeap {
  readonly #nodes: Node[] = [];
  readonly #keys: number[] = [];
  readonly #order: number[] = [];
  #pushed = 0;

  #less(i: number, j: number): boolean {
    return this.#keys[i] < this.#keys[j] || (this.#keys[i] === this.#keys[j] && this.#order[i] < this.#order[j]);
  }

  #swap(i: number, j: number): void {
    [this.#nodes[i], this.#nodes[j]] = [this.#nodes[j], this.#nodes[i]];
    [this.#keys[i], this.#keys[j]] = [this.#keys[j], this.#keys[i]];
    [this.#order[i], this.#order[j]] = [this.#order[j], this.#order[i]];
  }

  push(node: Node, tick: number): void {
    let i = this.#nodes.length;
    this.#nodes.push(node); this.#keys.push(tick); this.#order.push(this.#pushed++);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(i, p)) break;
      this.#swap(i, p);
      i = p;
    }
  }

  pop(): Node | undefined {
    const n = this.#nodes.length;
    if (n === 0) return undefined;
    const top = this.#nodes[0];
    this.#swap(0, n - 1);
    this.#nodes.pop(); this.#keys.pop(); this.#order.pop();
    for (let i = 0; ;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < n - 1 && this.#less(l, m)) m = l;
      if (r < n - 1 && this.#less(r, m)) m = r;
      if (m === i) break;
      this.#swap(i, m);
      i = m;
    }
    return top;
  }
}

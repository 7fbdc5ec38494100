/**
 * Cache-namespace (salt) inheritance on events (Dynamo `lib/kv-router/src/protocols.rs`, Dynamo's
 * `propagate_cache_namespace`). vLLM puts the salt only on the event that starts a salted chain;
 * continuation events (parent set, no salt) must hash with the parent's namespace. This keeps a
 * per-rank map engine hash -> namespace:
 * - a salted store records its namespace for each of its blocks;
 * - an unsalted continuation inherits its parent's namespace; an unknown parent means unsalted
 *   (deliberate fail-open: a listener joining mid-chain cannot tell);
 * - a block seen under two namespaces (or salted and unsalted) becomes ambiguous, and later
 *   children of it are dropped;
 * - removes drop entries (ambiguous ones stay), a clear drops the rank's whole map.
 *
 * Only salted traffic pays: while a rank's map is empty, unsalted events do no per-hash work.
 * Keys are built from the (lo, hi) words of the decoder, never through a JS number.
 */

const AMBIGUOUS: unique symbol = Symbol('ambiguous');
type State = string | typeof AMBIGUOUS;

/** `resolve()` result for an event whose parent is ambiguous: drop it. */
export const DROP_AMBIGUOUS = null;

const key = (words: Uint32Array, i: number): string => `${words[2 * i + 1]}:${words[2 * i]}`;

export class CacheNamespaces {
  private readonly byRank = new Map<number, Map<string, State>>();

  /**
   * The namespace a store hashes with, recording it for the store's blocks (hashes
   * `[start, start + count)` of `words`). Returns "" for unsalted, {@link DROP_AMBIGUOUS} when
   * the event must be dropped. `parentWords` holds the parent hash (lo, hi) when `hasParent`.
   */
  resolve(rank: number, salt: string | null, hasParent: boolean, parentLo: number, parentHi: number,
    words: Uint32Array, start: number, count: number): string | null {
    let map = this.byRank.get(rank);
    let ns = salt ?? '';
    if (ns === '' && hasParent && map !== undefined && map.size > 0) {
      const parent = map.get(`${parentHi >>> 0}:${parentLo >>> 0}`);
      if (parent === AMBIGUOUS) return DROP_AMBIGUOUS;
      if (parent !== undefined) ns = parent;
    }
    if (ns !== '') {
      if (map === undefined) { map = new Map(); this.byRank.set(rank, map); }
      for (let i = start; i < start + count; i++) {
        const k = key(words, i), cur = map.get(k);
        if (cur === undefined) map.set(k, ns);
        else if (cur !== ns) map.set(k, AMBIGUOUS);
      }
    } else if (map !== undefined && map.size > 0) {
      // An unsalted store of a hash that belongs to a namespace makes it ambiguous.
      for (let i = start; i < start + count; i++) {
        const k = key(words, i);
        if (map.has(k)) map.set(k, AMBIGUOUS);
      }
    }
    return ns;
  }

  /** A remove: forget the hashes (ambiguous entries stay: they must keep failing closed). */
  removed(rank: number, words: Uint32Array, start: number, count: number): void {
    const map = this.byRank.get(rank);
    if (map === undefined || map.size === 0) return;
    for (let i = start; i < start + count; i++) {
      const k = key(words, i);
      if (map.get(k) !== AMBIGUOUS) map.delete(k);
    }
  }

  /** A clear: forget the rank. */
  cleared(rank: number): void { this.byRank.delete(rank); }

  /** Entries held for a rank (tests, stats). */
  size(rank: number): number { return this.byRank.get(rank)?.size ?? 0; }
}

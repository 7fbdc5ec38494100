/**
 * The plain-TypeScript reference model of the prefix index: the test oracle for `wasm-index.ts`.
 *
 * It implements the contract in `../index-types.ts` literally, with plain Maps and BigInt keys,
 * clear over fast. No `node:` imports: it also runs in a browser.
 *
 * Invariants kept by every operation (used by the comments below):
 * - `lookup[s][e] === n` iff `n.holders.get(s) === e` (device tier);
 * - every node in the tree has at least one holder (a node that loses its last holder is
 *   deleted with its whole subtree at once);
 * - tier edges: `lookup[s][e] === edge` iff `edge.owners.has(s)` and `edge.child === e`;
 *   every stored edge has at least one owner.
 */
import { StoreStatus, Tier } from '../../src/core/index/index-types.js';
import type { BlockRef, Holding, MatchRow, PrefixIndexModel } from '../../src/core/index/index-types.js';

/** One device-tree node (one block, keyed by its local hash under its parent). */
interface Node {
  readonly local: bigint;
  readonly parent: Node | null;
  readonly children: Map<bigint, Node>;
  /** slot -> the ext under which that slot holds this node. */
  readonly holders: Map<number, bigint>;
}

/** One continuation edge of a lower tier: (parent ext | null, local) -> child ext, owners. */
interface Edge {
  readonly key: string;
  readonly parent: bigint | null;
  readonly local: bigint;
  readonly child: bigint;
  readonly owners: Set<number>;
}

/** One lower tier (host, disk or external). */
interface TierState {
  readonly edges: Map<string, Edge>;
  /** slot -> ext -> edge. */
  readonly lookup: Map<number, Map<bigint, Edge>>;
}

const LOWER_TIERS = [Tier.Host, Tier.Disk, Tier.External] as const;

function edgeKey(parent: bigint | null, local: bigint): string {
  return `${parent ?? '-'}:${local}`;
}

/** True when two blocks share an ext or a block's ext equals `parent` (rule 1 of `store`). */
function invalidSequence(parent: bigint | null, blocks: readonly BlockRef[]): boolean {
  const seen = new Set<bigint>();
  for (const b of blocks) {
    if (b.ext === parent || seen.has(b.ext)) return true;
    seen.add(b.ext);
  }
  return false;
}

function newNode(local: bigint, parent: Node | null): Node {
  return { local, parent, children: new Map(), holders: new Map() };
}

/**
 * Reference implementation of {@link PrefixIndexModel}: a device radix tree (one block per node)
 * plus host/disk/external continuation-edge tiers, exactly as defined in `index-types.ts`.
 */
export class ReferenceIndex implements PrefixIndexModel {
  private readonly root: Node = newNode(0n, null);
  /** Device tier: slot -> ext -> node. */
  private readonly lookup = new Map<number, Map<bigint, Node>>();
  private readonly tiers: TierState[] = LOWER_TIERS.map(() => ({ edges: new Map(), lookup: new Map() }));

  /** Store `blocks` for `slot` in `tier`, continuing from `parent` (null = from the root). */
  store(slot: number, tier: Tier, parent: bigint | null, blocks: readonly BlockRef[]): number {
    if (invalidSequence(parent, blocks)) return StoreStatus.InvalidSequence;
    if (tier !== Tier.Device) return this.storeTier(this.tierState(tier), slot, parent, blocks);
    const lk = this.lookup.get(slot);
    let cur: Node | undefined = this.root;
    if (parent !== null) {
      cur = lk?.get(parent);
      if (cur === undefined) return StoreStatus.ParentNotFound;
    }
    const map = lk ?? new Map<bigint, Node>();
    if (lk === undefined) this.lookup.set(slot, map);
    for (let i = 0; i < blocks.length; i++) {
      const { ext, local } = blocks[i];
      let child: Node | undefined = cur.children.get(local);
      const mapped = map.get(ext);
      if (mapped !== undefined && mapped !== child) return i; // ext conflict: stop here
      if (child === undefined) {
        child = newNode(local, cur);
        cur.children.set(local, child);
      }
      const old = child.holders.get(slot);
      if (old !== undefined && old !== ext) map.delete(old); // re-key
      child.holders.set(slot, ext);
      map.set(ext, child);
      cur = child;
    }
    return blocks.length;
  }

  /** Remove the blocks `exts` held by `slot` in `tier`; returns how many exts were found. */
  remove(slot: number, tier: Tier, exts: readonly bigint[]): number {
    let found = 0;
    if (tier !== Tier.Device) {
      const ts = this.tierState(tier);
      for (const ext of exts) if (this.removeEdge(ts, slot, ext)) found++;
      return found;
    }
    const map = this.lookup.get(slot);
    if (map === undefined) return 0;
    for (const ext of exts) {
      const node = map.get(ext);
      if (node === undefined) continue;
      found++;
      this.release(slot, node);
    }
    return found;
  }

  /** `slot` loses every block of `tier` (-1 = all tiers), with the device cascade rule. */
  clear(slot: number, tier: Tier | -1): void {
    if (tier === -1 || tier === Tier.Device) {
      const map = this.lookup.get(slot);
      if (map !== undefined) {
        // Snapshot first: cascades delete entries of `map` while we walk.
        for (const node of [...map.values()]) if (node.holders.has(slot)) this.release(slot, node);
        this.lookup.delete(slot);
      }
    }
    for (const t of LOWER_TIERS) {
      if (tier !== -1 && tier !== t) continue;
      const ts = this.tierState(t);
      const map = ts.lookup.get(slot);
      if (map === undefined) continue;
      for (const ext of [...map.keys()]) this.removeEdge(ts, slot, ext);
      ts.lookup.delete(slot);
    }
  }

  /** Forget `slot` entirely: `clear(slot, -1)`. */
  removeSlot(slot: number): void {
    this.clear(slot, -1);
  }

  /** One row per slot with a nonzero count, sorted by slot (device depth + tier extensions). */
  match(locals: readonly bigint[]): MatchRow[] {
    const n = locals.length;
    /** slot -> [pos, last ext] continuation state, plus the row being built. */
    const rows = new Map<number, MatchRow>();
    const cont = new Map<number, { pos: number; last: bigint | null }>();
    // Device: walk the tree; a slot drops out at the first node it does not hold.
    let node: Node | undefined = this.root;
    let alive: Set<number> | null = null; // null = every slot (at the root)
    for (let d = 0; d < n && node !== undefined; d++) {
      node = node.children.get(locals[d]);
      if (node === undefined) break;
      const next = new Set<number>();
      for (const [slot, ext] of node.holders) {
        if (alive !== null && !alive.has(slot)) continue;
        next.add(slot);
        cont.set(slot, { pos: d + 1, last: ext });
      }
      if (next.size === 0) break;
      alive = next;
    }
    for (const [slot, c] of cont) rows.set(slot, { slot, device: c.pos, hostExt: 0, diskExt: 0, externalExt: 0 });
    // Lower tiers continue from (pos, last); slots with pos 0 start from the root edge.
    for (const t of LOWER_TIERS) {
      if (n === 0) break;
      const ts = this.tierState(t);
      const rootEdge = ts.edges.get(edgeKey(null, locals[0]));
      if (rootEdge !== undefined) {
        for (const slot of rootEdge.owners) if (!cont.has(slot)) cont.set(slot, { pos: 0, last: null });
      }
      for (const [slot, c] of cont) {
        let hits = 0;
        while (c.pos < n) {
          const e = ts.edges.get(edgeKey(c.last, locals[c.pos]));
          if (e === undefined || !e.owners.has(slot)) break;
          hits++;
          c.last = e.child;
          c.pos++;
        }
        if (hits === 0) continue;
        let row = rows.get(slot);
        if (row === undefined) {
          row = { slot, device: 0, hostExt: 0, diskExt: 0, externalExt: 0 };
          rows.set(slot, row);
        }
        if (t === Tier.Host) row.hostExt = hits;
        else if (t === Tier.Disk) row.diskExt = hits;
        else row.externalExt = hits;
      }
    }
    return [...rows.values()].sort((a, b) => a.slot - b.slot);
  }

  /** Number of blocks `slot` holds in `tier` (its lookup size). */
  /**
   * Device holdings (slot, node) whose slot does not hold the node's parent (below depth 1). Not
   * part of the contract: the wasm index keeps this count exactly for its fast match walk, and the
   * differential tests compare the two after every operation.
   */
  orphanCount(): number {
    let n = 0;
    const stack = [...this.root.children.values()];
    for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
      if (node.parent !== null && node.parent !== this.root) {
        for (const slot of node.holders.keys()) if (!node.parent.holders.has(slot)) n++;
      }
      stack.push(...node.children.values());
    }
    return n;
  }

  treeSize(slot: number, tier: Tier): number {
    const map = tier === Tier.Device ? this.lookup.get(slot) : this.tierState(tier).lookup.get(slot);
    return map?.size ?? 0;
  }

  /**
   * The canonical snapshot: device holdings breadth-first (only holdings whose slot holds every
   * ancestor; parentExt = that slot's ext at the parent node), then host, disk, external edges.
   */
  dumpHoldings(): Holding[] {
    const out: Holding[] = [];
    // Queue of (node, slots holding the whole path down to and including node; null = root).
    let level: { node: Node; full: Map<number, bigint> | null }[] = [{ node: this.root, full: null }];
    while (level.length > 0) {
      const next: typeof level = [];
      for (const { node, full } of level) {
        for (const child of node.children.values()) {
          const cfull = new Map<number, bigint>();
          for (const [slot, ext] of child.holders) {
            if (full !== null && !full.has(slot)) continue;
            cfull.set(slot, ext);
            out.push({ slot, tier: Tier.Device, ext, parentExt: full === null ? null : full.get(slot)!, local: child.local });
          }
          if (cfull.size > 0) next.push({ node: child, full: cfull });
        }
      }
      level = next;
    }
    for (const t of LOWER_TIERS) {
      for (const e of this.tierState(t).edges.values()) {
        for (const slot of e.owners) out.push({ slot, tier: t, ext: e.child, parentExt: e.parent, local: e.local });
      }
    }
    return out;
  }

  /** Exts `slot` currently maps in `tier`, oldest first (inspection helper, not in the contract). */
  heldExts(slot: number, tier: Tier): bigint[] {
    const map = tier === Tier.Device ? this.lookup.get(slot) : this.tierState(tier).lookup.get(slot);
    return map === undefined ? [] : [...map.keys()];
  }

  private tierState(tier: Tier): TierState {
    const ts = this.tiers[tier - 1];
    if (ts === undefined) throw new RangeError(`unknown tier ${tier}`);
    return ts;
  }

  /** `slot` stops holding `node`; if nobody holds it any more, delete its whole subtree. */
  private release(slot: number, node: Node): void {
    const ext = node.holders.get(slot)!;
    node.holders.delete(slot);
    this.lookup.get(slot)!.delete(ext);
    if (node.holders.size > 0) return;
    node.parent!.children.delete(node.local);
    const stack: Node[] = [...node.children.values()];
    while (stack.length > 0) {
      const d = stack.pop()!;
      for (const [s, e] of d.holders) this.lookup.get(s)!.delete(e);
      d.holders.clear();
      for (const c of d.children.values()) stack.push(c);
      d.children.clear();
    }
    node.children.clear();
  }

  private storeTier(ts: TierState, slot: number, parent: bigint | null, blocks: readonly BlockRef[]): number {
    let map = ts.lookup.get(slot);
    if (map === undefined) {
      map = new Map();
      ts.lookup.set(slot, map);
    }
    let p = parent;
    let applied = 0;
    for (const { ext, local } of blocks) {
      const key = edgeKey(p, local);
      let e = ts.edges.get(key);
      const mapped = map.get(ext);
      if (!((e !== undefined && e.child !== ext) || (mapped !== undefined && mapped !== e))) {
        if (e === undefined) {
          e = { key, parent: p, local, child: ext, owners: new Set() };
          ts.edges.set(key, e);
        }
        e.owners.add(slot);
        map.set(ext, e);
        applied++;
      }
      p = ext;
    }
    return applied;
  }

  /** Remove `slot` from the edge it maps `ext` to; false when unknown. */
  private removeEdge(ts: TierState, slot: number, ext: bigint): boolean {
    const map = ts.lookup.get(slot);
    const e = map?.get(ext);
    if (e === undefined) return false;
    map!.delete(ext);
    e.owners.delete(slot);
    if (e.owners.size === 0) ts.edges.delete(e.key);
    return true;
  }
}

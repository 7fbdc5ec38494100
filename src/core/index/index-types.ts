/**
 * The prefix index contract: one index per partition (fixed block size), shared by the wasm
 * implementation (`wasm-index.ts`) and the plain-TS reference model (`reference/index-model.ts`),
 * which is the test oracle. Both must agree exactly on every operation below.
 *
 * Identities (Dynamo `lib/kv-router/src/protocols.rs`): `local` = the block's token-content hash (what requests match
 * with); `ext` = the engine's own block hash (opaque; parent linkage and removal). Workers are
 * dense slots (a `(worker_id, dp_rank)` interned by the caller).
 *
 * Semantics (the definition both implementations follow):
 *
 * DEVICE tier = a tree keyed by local hash, root = empty prefix; per slot a lookup ext -> node.
 * store(slot, DEVICE, parent, blocks):
 *   1. If two blocks share an ext, or a block's ext equals `parent`: return INVALID_SEQUENCE, no change.
 *   2. cur = root if parent is null, else lookup[slot][parent]; unknown -> return PARENT_NOT_FOUND, no change.
 *   3. For each block i in order: let child = cur.children[local_i] (may not exist yet).
 *      a. If lookup[slot] has ext_i mapped to a node other than child (or child does not exist):
 *         stop; return i (blocks 0..i-1 stay applied).
 *      b. Create child if absent. If slot already holds child under another ext e_old, re-key:
 *         delete lookup[slot][e_old]. Slot holds child with ext_i; lookup[slot][ext_i] = child.
 *      c. cur = child.
 *   4. Return blocks.length.
 * remove(slot, DEVICE, exts): for each ext in order: node = lookup[slot][ext]; unknown -> skip
 *   (not counted as removed). Otherwise slot stops holding node and the lookup entry goes. If node
 *   now has no holder, node and its whole subtree are deleted: every holder of every descendant
 *   loses that block (its lookup entry is deleted). Returns the number of exts found.
 * clear(slot, tier): the slot loses every block of that tier (tier -1 = all tiers), with the same
 *   cascade rule. removeSlot(slot) = clear(slot, -1).
 *
 * HOST / DISK / EXTERNAL tiers = continuation edges (Dynamo `lib/kv-router/src/indexer/lower_tier.rs`): a set of unique edges
 * key (parent ext | null, local) -> (child ext, owners); per slot a lookup ext -> edge.
 * store(slot, tier, parent, blocks): step 1 as above (INVALID_SEQUENCE). Never PARENT_NOT_FOUND.
 *   p = parent; for each block i: e = edge(p, local_i). If e exists with child ext != ext_i, or
 *   lookup[slot] has ext_i mapped to another edge: the block is ignored. Else create e if absent,
 *   add slot to e.owners, lookup[slot][ext_i] = e, applied++. Then p = ext_i. Return applied.
 * remove(slot, tier, exts): for each ext: e = lookup[slot][ext]; unknown -> skip; else remove slot
 *   from owners, delete the lookup entry, delete e when it has no owner. Returns exts found.
 *
 * match(locals) -> one row per slot with any nonzero count, sorted by slot:
 *   device = largest k such that the tree path of locals[0..k) exists and slot holds every node
 *   on it. Then for tier in HOST, DISK, EXTERNAL: pos = device + hits of earlier tiers; last =
 *   slot's ext at position pos-1 (the device node's ext, or the child ext of the last tier hit;
 *   null when pos = 0); while pos < n: e = edge(last, locals[pos]); stop unless e exists and slot
 *   owns it; hits++, last = e.child ext, pos++. Row: hostExt, diskExt, externalExt = the hits.
 *   Cumulative tokens (Dynamo `lib/kv-router/src/indexer/lower_tier.rs`): gpu = device, cpu = device + hostExt,
 *   disk = cpu + diskExt + externalExt, all times block size.
 *
 * treeSize(slot, tier) = number of blocks the slot holds in that tier (its lookup size).
 *
 * dumpHoldings(): the canonical snapshot used to compare implementations and to build /dump:
 *   every (slot, tier, ext, parentExt, local) such that replaying `store(slot, tier, parentExt,
 *   [{ext, local}])` in the returned order into an empty index rebuilds every matchable holding.
 *   Device holdings are listed only when the slot holds every ancestor (others can never match);
 *   parentExt is the slot's ext at the parent node (null at depth 1). Order: device holdings
 *   breadth-first (parents before children), then host, disk, external edges. Implementations
 *   may order siblings differently; compare with `canonicalHoldings()`.
 */

/** Storage tiers, in continuation order (Dynamo `lib/kv-router/src/indexer/lower_tier.rs`). */
export const Tier = { Device: 0, Host: 1, Disk: 2, External: 3 } as const;
export type Tier = (typeof Tier)[keyof typeof Tier];
export const TIERS: readonly Tier[] = [Tier.Device, Tier.Host, Tier.Disk, Tier.External];
export const TIER_NAMES = ['device', 'host_pinned', 'disk', 'external'] as const;

/** Status codes of `store` (>= 0: blocks applied). Same values as assembly/layout.ts. */
export const StoreStatus = { ParentNotFound: -1, InvalidSequence: -2 } as const;

export interface BlockRef { ext: bigint; local: bigint }

export interface MatchRow {
  slot: number;
  device: number;
  hostExt: number;
  diskExt: number;
  externalExt: number;
}

export interface Holding {
  slot: number;
  tier: Tier;
  ext: bigint;
  parentExt: bigint | null;
  local: bigint;
}

/** The cold, BigInt-based surface both implementations offer (tests, dumps, tools). */
export interface PrefixIndexModel {
  store(slot: number, tier: Tier, parent: bigint | null, blocks: readonly BlockRef[]): number;
  remove(slot: number, tier: Tier, exts: readonly bigint[]): number;
  clear(slot: number, tier: Tier | -1): void;
  removeSlot(slot: number): void;
  match(locals: readonly bigint[]): MatchRow[];
  treeSize(slot: number, tier: Tier): number;
  dumpHoldings(): Holding[];
}

/** Sort holdings into a canonical order so two implementations' dumps compare with deepEqual. */
export function canonicalHoldings(h: readonly Holding[]): string[] {
  return h.map((x) => `${x.tier}|${x.slot}|${x.parentExt ?? '-'}|${x.local}|${x.ext}`).sort();
}

// The device tier: a tree keyed by local block hash (one block per node), with per-slot lookups
// engine hash -> node. Semantics: src/core/index/index-types.ts (the shared contract); node,
// holder-set and child-array layouts: layout.ts.
//
// Independent probes. A child link is keyed by the child's path hash (layout.ts), which a store
// or a match computes from the hashes in hand, without reading the parent node. So for a chunk
// of blocks every probe address is known first: one pass loads the home cells of the child links
// and of the slot's lookup, a second loads the nodes those cells name, and only then the blocks
// are applied in order, against cached lines. The CPU overlaps the misses of a pass (measured on
// this VM: a dependent probe into 64-256 MiB costs 186-226 ns, independent ones in batches of 16
// cost 14-16 ns each), where the walk it replaced paid them one after another.
//
// Invariant: every non-root node has at least one holder. A node losing its last holder takes
// its subtree with it (nothing below is reachable for anyone), so memory is reclaimed at once.
import { NONE, FREED, ST_PARENT_NOT_FOUND, N_HASH, N_EXT0, N_PARENT, N_HOLD, N_KIDS } from './layout';
import { Pool, rec32, poolAlloc, poolRelease } from './pool';
import { mix64 } from './rectable';
import {
  tabFirst, tabNext, tabInsert, tabInsertAt, tabDelete, tabDeleteAt, tabValues, tabReset, tabCount, tabHomeAddr, tabBucket,
  bCells, bHome, bMask, probeEnd,
} from './hashtab';
import { Index, slotMap, addHoldings } from './state';
import {
  holds, heldExt, setHeldExt, addHolder, dropHolder, setSlotAt, setExtAt, setCount, setFree, lastKid,
  addKid, dropKid,
} from './holders';

/** Blocks per prefetch chunk: enough misses in flight, few enough lines to stay in L1. */
export const CHUNK: i32 = 32;

// ---- path hashes ----

/** The path hash of a child with local hash `local` under a node of path hash `parent`. */
@inline export function pathHash(parent: u64, local: u64): u64 { return mix64(parent + local); }

let inv1: u64 = 0, inv2: u64 = 0;
/** Inverse of an odd u64 multiplier (Newton: each step doubles the correct low bits). */
function inverse(c: u64): u64 {
  let x = c;
  for (let i = 0; i < 5; i++) x *= 2 - c * x;
  return x;
}
/** The local hash of a child with path hash h under a parent of path hash ph (dump). */
export function localOf(h: u64, ph: u64): u64 {
  if (inv1 == 0) { inv1 = inverse(0xFF51AFD7ED558CCD); inv2 = inverse(0xC4CEB9FE1A85EC53); }
  let x = h ^ (h >> 33);
  x *= inv2;
  x ^= x >> 33;
  x *= inv1;
  x ^= x >> 33;
  return x - ph;
}

/** Child-link fingerprint of a path hash (it is well mixed already). */
@inline export function hashFp(h: u64): u32 { return <u32>(h >> 32); }
/** Fingerprint of an engine hash in a slot's lookup. */
@inline export function extFp(ext: u64): u32 { return <u32>(mix64(ext) >> 32); }

@inline export function nHash(p: Pool, n: u32): u64 { return load<u64>(rec32(p, n), N_HASH); }
@inline export function nParent(p: Pool, n: u32): u32 { return load<u32>(rec32(p, n), N_PARENT); }

/** Child of node `parent` with path hash h, or NONE. */
export function childFind(p: Pool, parent: u32, h: u64): u32 {
  for (let v = tabFirst(p.table, hashFp(h)); v != NONE; v = tabNext()) {
    const r = rec32(p, v);
    if (load<u32>(r, N_PARENT) == parent && load<u64>(r, N_HASH) == h) return v;
  }
  return NONE;
}

/**
 * childFind in the child-table bucket b that prefetchChildren found for h (valid while no
 * bucket has split since: during a match, nothing changes).
 */
export function childFindIn(p: Pool, parent: u32, h: u64, b: usize): u32 {
  const fp = hashFp(h), c = bCells(b), mask = bMask(b);
  let i = bHome(b, fp);
  while (true) {
    const w = load<u64>(c + (<usize>i << 3));
    const v = <u32>w;
    if (v == NONE) return NONE;
    if (<u32>(w >> 32) == fp) {
      const r = rec32(p, v);
      if (load<u32>(r, N_PARENT) == parent && load<u64>(r, N_HASH) == h) return v;
    }
    i = (i + 1) & mask;
  }
}

/** The node `slot` holds under `ext` (its lookup m), or NONE: candidates verified at their holder entry. */
export function slotFind(p: Pool, m: usize, slot: u32, ext: u64): u32 {
  for (let v = tabFirst(m, extFp(ext)); v != NONE; v = tabNext()) if (holds(rec32(p, v), slot) && heldExt == ext) return v;
  return NONE;
}

/** Sink of the prefetching loads (kept, so the optimiser cannot drop them). */
let sink: u64 = 0;
export function holdSink(x: u64): void { sink ^= x; }
/** Path hashes of the chunk in hand, the child-table buckets they fall in, and their home cells' addresses. */
export const chunkHashes = memory.data(CHUNK * 8);
export const chunkBuckets = memory.data(CHUNK * 4);
const chunkCells = memory.data(CHUNK * 4);

/**
 * Prefetch passes for the child links of locals [base, end) below a node of path hash h: their
 * path hashes into chunkHashes, then a load of every home cell, then of every node the home cells
 * name. Returns the path hash of the last block.
 */
export function prefetchChildren(p: Pool, h: u64, locals: usize, base: i32, end: i32): u64 {
  const ct = p.table;
  let acc: u64 = 0;
  for (let i = base; i < end; i++) {
    h = pathHash(h, load<u64>(locals + (<usize>i << 3)));
    store<u64>(chunkHashes + (<usize>(i - base) << 3), h);
    const b = tabBucket(ct, hashFp(h));
    const cell = bCells(b) + (<usize>bHome(b, hashFp(h)) << 3);
    store<u32>(chunkBuckets + (<usize>(i - base) << 2), <u32>b);
    store<u32>(chunkCells + (<usize>(i - base) << 2), <u32>cell);
    acc ^= load<u64>(cell);
  }
  for (let i = 0; i < end - base; i++) {
    const w = load<u64>(<usize>load<u32>(chunkCells + (<usize>i << 2)));
    if (<u32>w != NONE && <u32>(w >> 32) == hashFp(load<u64>(chunkHashes + (<usize>i << 3)))) acc ^= load<u64>(rec32(p, <u32>w), N_HASH);
  }
  sink ^= acc;
  return h;
}

/** A new child of `parent` with path hash h; `end`: where childFind's probe for it ended. */
function createChild(p: Pool, parent: u32, h: u64, end: u64): u32 {
  const n = poolAlloc(p);
  const r = rec32(p, n);
  store<u64>(r, h, N_HASH);
  store<u32>(r, parent, N_PARENT);
  store<u32>(r, NONE, N_KIDS);
  addKid(p, rec32(p, parent), n, r);
  tabInsertAt(p.table, end, hashFp(h), n);
  return n;
}

// --- orphans: device holdings (slot, node) whose slot does not hold the node's parent. A store
// never makes one (it extends a chain the slot holds); a remove of a node that the slot holds
// children of does. While there are none, every slot's holdings along a path are a prefix of it,
// which the match's fast walk relies on (match.ts); the count is kept exact here. ---

/** Whether `slot` holds the parent of node record r (the root counts as held by every slot). */
@inline function parentHeld(p: Pool, r: usize, slot: u32): bool {
  const parent = load<u32>(r, N_PARENT);
  return parent == 0 || holds(rec32(p, parent), slot);
}

/** How many children of node record r `slot` holds. */
function heldKids(p: Pool, r: usize, slot: u32): u32 {
  const k = load<u32>(r, N_KIDS);
  if (k == NONE) return 0;
  if ((k & 1) != 0) return holds(rec32(p, k >> 1), slot) ? 1 : 0;
  const a = <usize>k, n = load<u32>(a);
  let c: u32 = 0;
  for (let i: u32 = 0; i < n; i++) if (holds(rec32(p, load<u32>(a + 8 + (<usize>i << 2))), slot)) c++;
  return c;
}

/**
 * `slot` drops node n (record r), which it holds: the holder entry goes (the caller removed the
 * lookup entry), the orphan count follows, and a node left without holders goes with its subtree.
 */
function dropHolding(ix: Index, p: Pool, n: u32, r: usize, slot: u32): void {
  addHoldings(ix, 0, -1);
  if (ix.orphans > 0 && !parentHeld(p, r, slot)) ix.orphans--;
  if (dropHolder(r, slot) > 0) ix.orphans += heldKids(p, r, slot);
  else deleteSubtree(ix, p, n, slot);
}

/** The slot deviceClear is dropping: its orphans left the count up front. */
let clearing: u32 = NONE;

/** Delete every holder's lookup entry for node n and free its holder set; `wasOrphan`: see deleteSubtree. */
function releaseHolders(ix: Index, p: Pool, r: usize, n: u32, top: u32, dropper: u32): void {
  const h = load<u32>(r, N_HOLD);
  const count = ix.orphans > 0;
  if ((h & 1) != 0) {
    const s = h >> 1;
    tabDelete(slotMap(ix, s, 0), extFp(load<u64>(r, N_EXT0)), n);
    if (count && s != clearing && wasOrphan(p, r, top, dropper, s)) ix.orphans--;
    addHoldings(ix, 0, -1);
  } else if (h != 0) {
    const v = <usize>h, c = setCount(v);
    for (let i: u32 = 0; i < c; i++) {
      const s = setSlotAt(v, i);
      tabDelete(slotMap(ix, s, 0), extFp(setExtAt(v, i)), n);
      if (count && s != clearing && wasOrphan(p, r, top, dropper, s)) ix.orphans--;
    }
    setFree(v);
    addHoldings(ix, 0, -<i32>c);
  }
  store<u32>(r, 0, N_HOLD);
}

/**
 * Was (s, node r) an orphan before `dropper` dropped `top`, the cascade's root? Below top the
 * parent still has its holders (the cascade goes post-order); top's only holder was the dropper.
 */
@inline function wasOrphan(p: Pool, r: usize, top: u32, dropper: u32, s: u32): bool {
  const parent = load<u32>(r, N_PARENT);
  return parent == top ? s != dropper : !holds(rec32(p, parent), s);
}

/** Delete node n (its last holder, `dropper`, just left) and its whole subtree, post-order, without a stack. */
function deleteSubtree(ix: Index, p: Pool, n: u32, dropper: u32): void {
  let cur = n;
  while (true) {
    let r = rec32(p, cur);
    while (load<u32>(r, N_KIDS) != NONE) { cur = lastKid(r); r = rec32(p, cur); }
    const parent = load<u32>(r, N_PARENT);
    releaseHolders(ix, p, r, cur, n, dropper);
    dropKid(p, rec32(p, parent), r);
    tabDelete(p.table, hashFp(load<u64>(r, N_HASH)), cur);
    poolRelease(p, cur);
    if (cur == n) return;
    cur = parent;
  }
}

/**
 * Stored(parent?, blocks) for `slot`: exts/locals are u64 arrays of n entries.
 * Returns blocks applied, or ST_PARENT_NOT_FOUND. (Sequence validity is checked by the caller.)
 */
export function deviceStore(ix: Index, slot: u32, hasParent: bool, parent: u64, exts: usize, locals: usize, n: i32): i32 {
  const p = ix.p0, work = chunkHashes;
  const m = slotMap(ix, slot, 0);
  let cur: u32 = 0, h: u64 = 0;
  if (hasParent) {
    cur = slotFind(p, m, slot, parent);
    if (cur == NONE) return ST_PARENT_NOT_FOUND;
    h = nHash(p, cur);
  }
  let acc: u64 = 0;
  for (let base = 0; base < n; base += CHUNK) {
    const end = min(n, base + CHUNK);
    // Prefetch: the lookup's home cells, the child links' home cells and the nodes they name.
    for (let i = base; i < end; i++) acc ^= load<u64>(tabHomeAddr(m, extFp(load<u64>(exts + (<usize>i << 3)))));
    h = prefetchChildren(p, h, locals, base, end);
    // Apply in order (contract: index-types.ts, store steps 3a-3c).
    for (let i = base; i < end; i++) {
      const ext = load<u64>(exts + (<usize>i << 3));
      const hh = load<u64>(work + (<usize>(i - base) << 3));
      const held = slotFind(p, m, slot, ext);
      const heldEnd = probeEnd();
      let child = childFind(p, cur, hh);
      if (held != NONE) {
        if (held != child) { sink ^= acc; return i; }  // the slot uses this engine hash elsewhere: stop
        cur = child;
        continue;
      }
      if (child == NONE) {
        child = createChild(p, cur, hh, probeEnd());
        addHolder(rec32(p, child), slot, ext);
        addHoldings(ix, 0, 1);
        tabInsertAt(m, heldEnd, extFp(ext), child);
      } else {
        const r = rec32(p, child);
        if (holds(r, slot)) {
          tabDelete(m, extFp(heldExt), child); // re-key: same node, new engine hash
          setHeldExt(r, slot, ext);
          tabInsert(m, extFp(ext), child);
        } else {
          addHolder(r, slot, ext);
          addHoldings(ix, 0, 1);
          tabInsertAt(m, heldEnd, extFp(ext), child);
          if (ix.orphans > 0) ix.orphans -= heldKids(p, r, slot); // its held children have their parent again
        }
      }
      cur = child;
    }
  }
  sink ^= acc;
  return n;
}

/** Removed(exts) for `slot`; returns how many were held. */
export function deviceRemove(ix: Index, slot: u32, exts: usize, n: i32): i32 {
  const p = ix.p0, ct = p.table;
  const m = slotMap(ix, slot, 0);
  let found = 0;
  let acc: u64 = 0;
  for (let base = 0; base < n; base += CHUNK) {
    const end = min(n, base + CHUNK);
    // Pass 1: the lookup cells; pass 2: the nodes they name; pass 3: what deleting them touches
    // (the parent and the node's child-link cell). Then the removes, in order.
    for (let i = base; i < end; i++) {
      const cell = tabHomeAddr(m, extFp(load<u64>(exts + (<usize>i << 3))));
      store<u32>(chunkCells + (<usize>(i - base) << 2), <u32>cell);
      acc ^= load<u64>(cell);
    }
    for (let i = 0; i < end - base; i++) {
      const w = load<u64>(<usize>load<u32>(chunkCells + (<usize>i << 2)));
      if (<u32>w != NONE) acc ^= load<u64>(rec32(p, <u32>w), N_EXT0);
    }
    for (let i = 0; i < end - base; i++) {
      const w = load<u64>(<usize>load<u32>(chunkCells + (<usize>i << 2)));
      if (<u32>w == NONE) continue;
      const r = rec32(p, <u32>w);
      const parent = load<u32>(r, N_PARENT);
      if (parent != NONE && parent != FREED) acc ^= <u64>load<u32>(rec32(p, parent), N_KIDS);
      acc ^= load<u64>(tabHomeAddr(ct, hashFp(load<u64>(r, N_HASH))));
    }
    for (let i = base; i < end; i++) {
      const ext = load<u64>(exts + (<usize>i << 3));
      const node = slotFind(p, m, slot, ext);
      if (node == NONE) continue;
      tabDeleteAt(m, probeEnd());
      found++;
      dropHolding(ix, p, node, rec32(p, node), slot);
    }
  }
  sink ^= acc;
  return found;
}

/**
 * Every device block of `slot` goes (Cleared). The slot's lookup is emptied first, then each
 * node is dropped; a node already freed by an earlier cascade is recognised by its FREED hold
 * word (no allocation happens meanwhile, so freed records are not reused during the loop).
 */
export function deviceClear(ix: Index, slot: u32, work: usize): void {
  const p = ix.p0;
  const m = slotMap(ix, slot, 0);
  if (tabCount(m) == 0) return;
  const k = tabValues(m, work);
  // The slot's own orphans leave the count at once, while its holdings are intact; the drops
  // below then do no orphan bookkeeping for it (no node's children are scanned).
  if (ix.orphans > 0) {
    let own: u32 = 0;
    for (let i: u32 = 0; i < k; i++) if (!parentHeld(p, rec32(p, load<u32>(work + (<usize>i << 2))), slot)) own++;
    ix.orphans -= own;
  }
  // Reset the lookup (its entries are dropped below without per-entry deletes).
  tabReset(m);
  clearing = slot;
  for (let i: u32 = 0; i < k; i++) {
    const node = load<u32>(work + (<usize>i << 2));
    const r = rec32(p, node);
    if (load<u32>(r, N_HOLD) == FREED || !holds(r, slot)) continue;
    addHoldings(ix, 0, -1);
    if (dropHolder(r, slot) == 0) deleteSubtree(ix, p, node, slot);
  }
  clearing = NONE;
}

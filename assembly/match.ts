// match(locals): per slot the device prefix depth plus the host/disk/external continuations
// (contract: src/core/index/index-types.ts; algorithms §3.3). Allocation-free.
//
// The device path of the query is found first, a chunk of levels at a time with independent
// probes (radix.ts): path hashes, then every level's child-link cell, then the nodes. Then the
// depths: while no holding is an orphan (the normal case: engines evict leaves first), only the
// levels where the holder count drops are walked (closedWalk); otherwise the level-synchronous
// walk visits the holders of every level, and a slot advances iff it was at depth k-1 (stamp ==
// epoch marks slots touched by this match, so the per-slot arrays never need clearing), stopping
// when none did. Either way the cost is independent of the total number of workers.
import { NONE, TIER_HOST, TIER_EXTERNAL, N_HASH, N_EXT0, N_HOLD } from './layout';
import { rec, rec32, vecSlots } from './pool';
import { Index, pool, slotMapIfAny } from './state';
import { CHUNK, childFind, childFindIn, pathHash, prefetchChildren, chunkHashes, chunkBuckets, holdSink } from './radix';
import { holds, heldExt, setSlotAt, setExtAt, setCount } from './holders';
import { edgeOf, eChild, eCount, slotEdge } from './tiers';
import { tabCount, tabHomeAddr } from './hashtab';

let rows: u32 = 0;

@inline function touch(ix: Index, slot: u32, outSlot: usize, epoch: u32): void {
  store<u32>(ix.stamp + (<usize>slot << 2), epoch);
  store<u32>(ix.depth + (<usize>slot << 2), 0);
  store<u32>(outSlot + (<usize>rows << 2), slot);
  rows++;
}

@inline function nextEpoch(ix: Index): u32 {
  let e = ix.epoch + 1;
  if (e == 0) { memory.fill(ix.stamp, 0, <usize>ix.slotCap << 2); e = 1; }
  ix.epoch = e;
  return e;
}

/**
 * The device path of q: its nodes into `path` (u32 each), as far as the tree has them; returns
 * how many. Chunks of levels are found with independent probes (radix.ts prefetchChildren).
 */
function resolvePath(ix: Index, q: usize, n: i32, path: usize): i32 {
  const p = ix.p0;
  let prev: u32 = 0, h: u64 = 0, level: i32 = 0, acc: u64 = 0, chunk: i32 = 8;
  while (level < n) {
    // Chunks of 8, 16, then 32 levels: a query usually runs past the tree's path, and the
    // probes of levels beyond it are wasted.
    const end = min(n, level + chunk);
    if (chunk < CHUNK) chunk <<= 1;
    h = prefetchChildren(p, h, q, level, end);
    for (let i = level; i < end; i++) {
      const j = <usize>(i - level);
      const node = childFindIn(p, prev, load<u64>(chunkHashes + (j << 3)), <usize>load<u32>(chunkBuckets + (j << 2)));
      if (node == NONE) { holdSink(acc); return i; }
      store<u32>(path + (<usize>i << 2), node);
      prev = node;
      const hold = load<u32>(rec32(p, node), N_HOLD);
      if ((hold & 1) == 0) acc ^= load<u64>(<usize>hold); // the holder set, read by the walk
    }
    level = end;
  }
  holdSink(acc);
  return n;
}

/**
 * Device depths when no holding is an orphan (radix.ts): a slot holding a node holds all its
 * ancestors, so the holders along the path are nested (H1 ⊇ H2 ⊇ ... ⊇ HL) and a slot's depth is
 * the deepest level that holds it. Level 1's holders become the rows, at depth 1; below, only the
 * levels whose holder count drops (and the last) are walked, deepest first, each assigning its
 * level to the holders still at depth 1. Cost: |H1| + the holders of those levels, where the
 * level-synchronous walk visits every holder of every level (a shared prefix of 100 blocks held
 * by 128 slots: 12,800 visits against 128 plus the drops).
 */
function closedWalk(ix: Index, path: usize, levels: i32, outSlot: usize, epoch: u32, needLast: bool): void {
  const p = ix.p0, depth = ix.depth, last = ix.last;
  visitHolders(ix, rec32(p, load<u32>(path)), 1, outSlot, epoch, needLast); // every row at depth 1
  let below: u32 = 0;
  for (let k = levels; k >= 2; k--) {
    const r = rec32(p, load<u32>(path + (<usize>(k - 1) << 2)));
    const hold = load<u32>(r, N_HOLD);
    const c: u32 = (hold & 1) != 0 ? 1 : setCount(<usize>hold);
    if (k < levels && c == below) continue;
    below = c;
    if ((hold & 1) != 0) {
      const s = hold >> 1;
      if (load<u32>(depth + (<usize>s << 2)) == 1) {
        store<u32>(depth + (<usize>s << 2), <u32>k);
        if (needLast) store<u64>(last + (<usize>s << 3), load<u64>(r, N_EXT0));
      }
      continue;
    }
    const v = <usize>hold;
    for (let i: u32 = 0; i < c; i++) {
      const s = setSlotAt(v, i);
      if (load<u32>(depth + (<usize>s << 2)) != 1) continue;
      store<u32>(depth + (<usize>s << 2), <u32>k);
      if (needLast) store<u64>(last + (<usize>s << 3), setExtAt(v, i));
    }
  }
}

/**
 * The holders of node record r at level `lv` (1-based; level 1 touches them first): each that
 * is at depth lv - 1 advances to lv. Returns how many advanced.
 */
function visitHolders(ix: Index, r: usize, lv: u32, outSlot: usize, epoch: u32, needLast: bool): u32 {
  const stamp = ix.stamp, depth = ix.depth, last = ix.last;
  const hold = load<u32>(r, N_HOLD);
  const one = (hold & 1) != 0, v = <usize>hold, c: u32 = one ? 1 : setCount(v);
  let advanced: u32 = 0;
  for (let i: u32 = 0; i < c; i++) {
    const s = one ? hold >> 1 : setSlotAt(v, i);
    if (lv == 1) touch(ix, s, outSlot, epoch);
    if (load<u32>(stamp + (<usize>s << 2)) == epoch && load<u32>(depth + (<usize>s << 2)) == lv - 1) {
      store<u32>(depth + (<usize>s << 2), lv);
      if (needLast) store<u64>(last + (<usize>s << 3), one ? load<u64>(r, N_EXT0) : setExtAt(v, i));
      advanced++;
    }
  }
  return advanced;
}

/**
 * Writes rows (slot, device, hostExt, diskExt, externalExt) into the five output regions and
 * returns the row count; only rows with a nonzero count are kept. Output regions must hold
 * slotCap entries (TS reserves them when it adds slots); `path` holds n u32 (work space).
 */
export function matchInto(ix: Index, q: usize, n: i32, path: usize, outSlot: usize, outDev: usize, outHost: usize, outDisk: usize, outExtn: usize): i32 {
  rows = 0;
  if (n <= 0) return 0;
  const epoch = nextEpoch(ix);
  const p = ix.p0;
  const stamp = ix.stamp, depth = ix.depth, last = ix.last;
  // --- device tier ---
  const needLast = ix.p1.live + ix.p2.live + ix.p3.live > 0; // lower tiers hold blocks
  const levels = resolvePath(ix, q, n, path);
  if (levels > 0) {
    if (ix.orphans == 0) closedWalk(ix, path, levels, outSlot, epoch, needLast);
    else {
      // Level-synchronous walk: at level k a slot advances iff it was at depth k - 1; stop when none did.
      for (let k = 1; k <= levels; k++) {
        if (visitHolders(ix, rec32(p, load<u32>(path + (<usize>(k - 1) << 2))), <u32>k, outSlot, epoch, needLast) == 0) break;
      }
    }
  }
  for (let i: u32 = 0; i < rows; i++) store<u32>(outDev + (<usize>i << 2), load<u32>(depth + (<usize>load<u32>(outSlot + (<usize>i << 2)) << 2)));
  memory.fill(outHost, 0, <usize>rows << 2);
  memory.fill(outDisk, 0, <usize>rows << 2);
  memory.fill(outExtn, 0, <usize>rows << 2);
  // Without lower-tier blocks every row is a device row (depth >= 1): done.
  if (!needLast) return <i32>rows;
  for (let i: u32 = 0; i < rows; i++) {
    const s = load<u32>(outSlot + (<usize>i << 2));
    store<u32>(ix.pos + (<usize>s << 2), load<u32>(depth + (<usize>s << 2)));
  }
  // --- lower tiers, in continuation order ---
  for (let tier = TIER_HOST; tier <= TIER_EXTERNAL; tier++) {
    const tp = pool(ix, tier);
    if (tp.live == 0) continue;
    const out = tier == TIER_HOST ? outHost : tier == 2 ? outDisk : outExtn;
    // Slots that own the root edge of this tier join with position 0.
    const root = edgeOf(tp, false, 0, load<u64>(q));
    if (root != NONE) {
      const rr = rec(tp, root);
      const c = eCount(tp, root);
      for (let i: u32 = 0; i < c; i++) {
        const s = c == 1 ? load<u32>(rr, 24) : load<u32>(vecSlots(<usize>load<u32>(rr, 24)) + (<usize>i << 2));
        if (load<u32>(stamp + (<usize>s << 2)) == epoch) continue;
        const row = rows;
        touch(ix, s, outSlot, epoch);
        store<u32>(ix.pos + (<usize>s << 2), 0);
        store<u32>(outDev + (<usize>row << 2), 0);
        store<u32>(outHost + (<usize>row << 2), 0);
        store<u32>(outDisk + (<usize>row << 2), 0);
        store<u32>(outExtn + (<usize>row << 2), 0);
      }
    }
    for (let i: u32 = 0; i < rows; i++) {
      const s = load<u32>(outSlot + (<usize>i << 2));
      const sm = slotMapIfAny(ix, s, tier);
      if (sm == 0 || tabCount(sm) == 0) continue;
      let pos = load<u32>(ix.pos + (<usize>s << 2));
      let lastExt = load<u64>(last + (<usize>s << 3));
      let hits: u32 = 0;
      while (<i32>pos < n) {
        const e = edgeOf(tp, pos > 0, lastExt, load<u64>(q + (<usize>pos << 3)));
        // Ownership is one probe of the slot's own lookup (owner lists can be long).
        if (e == NONE || slotEdge(tp, sm, eChild(tp, e)) != e) break;
        hits++;
        lastExt = eChild(tp, e);
        pos++;
      }
      if (hits > 0) {
        store<u32>(out + (<usize>i << 2), hits);
        store<u32>(ix.pos + (<usize>s << 2), pos);
        store<u64>(last + (<usize>s << 3), lastExt);
      }
    }
  }
  // --- keep rows with any nonzero count (tier-root joiners may have matched nothing) ---
  let k: u32 = 0;
  for (let i: u32 = 0; i < rows; i++) {
    const d = load<u32>(outDev + (<usize>i << 2)), h = load<u32>(outHost + (<usize>i << 2));
    const dk = load<u32>(outDisk + (<usize>i << 2)), x = load<u32>(outExtn + (<usize>i << 2));
    if ((d | h | dk | x) == 0) continue;
    if (k != i) {
      store<u32>(outSlot + (<usize>k << 2), load<u32>(outSlot + (<usize>i << 2)));
      store<u32>(outDev + (<usize>k << 2), d);
      store<u32>(outHost + (<usize>k << 2), h);
      store<u32>(outDisk + (<usize>k << 2), dk);
      store<u32>(outExtn + (<usize>k << 2), x);
    }
    k++;
  }
  return <i32>k;
}

/**
 * The engine (ext) hashes a slot holds along the device path of query `q`, root-aligned and
 * contiguous: out[i] = the slot's ext of block i, for i < the returned depth. (kv_hint sources.)
 */
export function chainExtsInto(ix: Index, q: usize, n: i32, slot: u32, out: usize): i32 {
  const p = ix.p0;
  let prev: u32 = 0, h: u64 = 0, level: i32 = 0;
  while (level < n) {
    h = pathHash(h, load<u64>(q + (<usize>level << 3)));
    const node = childFind(p, prev, h);
    if (node == NONE || !holds(rec32(p, node), slot)) break;
    store<u64>(out + (<usize>level << 3), heldExt);
    level++;
    prev = node;
  }
  return level;
}

// match(locals): per slot the device prefix depth plus the host/disk/external continuations
// (contract: src/core/index/index-types.ts; algorithms §3.3). Allocation-free.
//
// Device walk, level-synchronous: at level k only holders of the level-k node are visited; a
// slot advances iff it was at depth k-1 (stamp == epoch marks slots touched by this match, so
// the per-slot arrays never need clearing). The walk stops when no slot advanced. Cost: the sum
// of holder counts along the matched path, independent of the total number of workers. The
// path's nodes are found a chunk of levels at a time with independent probes (radix.ts): path
// hashes first, then every level's child-link cell, then the nodes, then the walk.
import { NONE, TIER_HOST, TIER_EXTERNAL, N_HASH, N_EXT0, N_HOLD } from './layout';
import { rec, vecSlots } from './pool';
import { Index, pool, slotMapIfAny } from './state';
import { CHUNK, childFind, pathHash, prefetchChildren, chunkHashes, holdSink } from './radix';
import { holds, heldExt, setSlotAt, setExtAt, setCount } from './holders';
import { edgeOf, eChild, eCount, slotEdge } from './tiers';
import { tabCount, tabHomeAddr } from './hashtab';

/** Nodes of the chunk of levels in hand. */
const levelNodes = memory.data(CHUNK * 4);

let rows: u32 = 0;

@inline function touch(ix: Index, slot: u32, outSlot: usize, epoch: u32): void {
  store<u32>(ix.stamp + (<usize>slot << 2), epoch);
  store<u32>(ix.depth + (<usize>slot << 2), 0);
  store<u32>(ix.pos + (<usize>slot << 2), 0);
  store<u32>(ix.row + (<usize>slot << 2), rows);
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
 * Writes rows (slot, device, hostExt, diskExt, externalExt) into the five output regions and
 * returns the row count; only rows with a nonzero count are kept. Output regions must hold
 * slotCap entries (TS reserves them when it adds slots).
 */
export function matchInto(ix: Index, q: usize, n: i32, outSlot: usize, outDev: usize, outHost: usize, outDisk: usize, outExtn: usize): i32 {
  rows = 0;
  if (n <= 0) return 0;
  const epoch = nextEpoch(ix);
  const p = ix.p0;
  const stamp = ix.stamp, depth = ix.depth, last = ix.last;
  // --- device tier ---
  const needLast = ix.p1.live + ix.p2.live + ix.p3.live > 0;
  let prev: u32 = 0, h: u64 = 0, acc: u64 = 0;
  let level: i32 = 0; // levels walked
  let walking = true;
  while (walking && level < n) {
    const end = min(n, level + CHUNK);
    h = prefetchChildren(p, h, q, level, end);
    let k = 0;
    for (let i = level; i < end; i++) {
      const node = childFind(p, prev, load<u64>(chunkHashes + (<usize>(i - level) << 3)));
      if (node == NONE) break;
      store<u32>(levelNodes + (<usize>k << 2), node);
      k++;
      prev = node;
      const hold = load<u32>(rec(p, node), N_HOLD);
      if ((hold & 1) == 0) acc ^= load<u64>(<usize>hold);
    }
    for (let j = 0; j < k; j++) {
      const lv = <u32>(level + j + 1);
      const r = rec(p, load<u32>(levelNodes + (<usize>j << 2)));
      const hold = load<u32>(r, N_HOLD);
      let advanced: u32 = 0;
      if ((hold & 1) != 0) {
        const s = hold >> 1;
        if (lv == 1) touch(ix, s, outSlot, epoch);
        if (load<u32>(stamp + (<usize>s << 2)) == epoch && load<u32>(depth + (<usize>s << 2)) == lv - 1) {
          store<u32>(depth + (<usize>s << 2), lv);
          if (needLast) store<u64>(last + (<usize>s << 3), load<u64>(r, N_EXT0));
          advanced = 1;
        }
      } else {
        const v = <usize>hold, span = setCount(v);
        for (let i: u32 = 0; i < span; i++) {
          const s = setSlotAt(v, i);
          if (lv == 1) touch(ix, s, outSlot, epoch);
          if (load<u32>(stamp + (<usize>s << 2)) == epoch && load<u32>(depth + (<usize>s << 2)) == lv - 1) {
            store<u32>(depth + (<usize>s << 2), lv);
            if (needLast) store<u64>(last + (<usize>s << 3), setExtAt(v, i));
            advanced++;
          }
        }
      }
      if (advanced == 0) { walking = false; break; }
    }
    if (k < end - level) walking = false;
    level = end;
  }
  holdSink(acc);
  for (let i: u32 = 0; i < rows; i++) {
    const s = load<u32>(outSlot + (<usize>i << 2));
    const d = load<u32>(depth + (<usize>s << 2));
    store<u32>(outDev + (<usize>i << 2), d);
    store<u32>(ix.pos + (<usize>s << 2), d);
    store<u32>(outHost + (<usize>i << 2), 0);
    store<u32>(outDisk + (<usize>i << 2), 0);
    store<u32>(outExtn + (<usize>i << 2), 0);
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
    if (node == NONE || !holds(rec(p, node), slot)) break;
    store<u64>(out + (<usize>level << 3), heldExt);
    level++;
    prev = node;
  }
  return level;
}

// match(locals): per slot the device prefix depth plus the host/disk/external continuations
// (contract: src/core/index-types.ts; algorithms §3.3). Allocation-free.
//
// Device walk, level-synchronous: at level k only holders of the level-k node are visited; a
// slot advances iff it was at depth k-1 (stamp == epoch marks slots touched by this match, so
// the per-slot arrays never need clearing). The walk stops when no slot advanced. Cost: the sum
// of holder counts along the matched path, independent of the total number of workers.
import { NONE, TIER_HOST, TIER_EXTERNAL } from './layout';
import { rec, vecSlots, vecExts } from './pool';
import { Index, pool, slotMapIfAny } from './state';
import { childOf } from './radix';
import { edgeOf, eChild, eCount } from './tiers';
import { tabCount } from './hashtab';
import { slotEdge } from './tiers';

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
  let node = childOf(p, 0, load<u64>(q));
  let level: u32 = 1;
  while (node != NONE) {
    const r = rec(p, node);
    const c = load<u32>(r, 20);
    let advanced: u32 = 0;
    if (c == 1) {
      const s = load<u32>(r, 24);
      if (level == 1) touch(ix, s, outSlot, epoch);
      if (load<u32>(stamp + (<usize>s << 2)) == epoch && load<u32>(depth + (<usize>s << 2)) == level - 1) {
        store<u32>(depth + (<usize>s << 2), level);
        store<u64>(last + (<usize>s << 3), load<u64>(r, 8));
        advanced = 1;
      }
    } else {
      const v = <usize>load<u32>(r, 24);
      const sp = vecSlots(v), ep = vecExts(v);
      for (let i: u32 = 0; i < c; i++) {
        const s = load<u32>(sp + (<usize>i << 2));
        if (level == 1) touch(ix, s, outSlot, epoch);
        if (load<u32>(stamp + (<usize>s << 2)) == epoch && load<u32>(depth + (<usize>s << 2)) == level - 1) {
          store<u32>(depth + (<usize>s << 2), level);
          store<u64>(last + (<usize>s << 3), load<u64>(ep + (<usize>i << 3)));
          advanced++;
        }
      }
    }
    if (advanced == 0 || <i32>level >= n) break;
    node = childOf(p, node, load<u64>(q + (<usize>level << 3)));
    level++;
  }
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
  if (n <= 0) return 0;
  const p = ix.p0;
  let node = childOf(p, 0, load<u64>(q));
  let level: i32 = 0;
  while (node != NONE) {
    const r = rec(p, node);
    const c = load<u32>(r, 20);
    let found = false;
    if (c == 1) {
      if (load<u32>(r, 24) == slot) { store<u64>(out + (<usize>level << 3), load<u64>(r, 8)); found = true; }
    } else {
      const v = <usize>load<u32>(r, 24);
      const sp = vecSlots(v), ep = vecExts(v);
      for (let i: u32 = 0; i < c; i++) {
        if (load<u32>(sp + (<usize>i << 2)) == slot) { store<u64>(out + (<usize>level << 3), load<u64>(ep + (<usize>i << 3))); found = true; break; }
      }
    }
    if (!found) break;
    level++;
    if (level >= n) break;
    node = childOf(p, node, load<u64>(q + (<usize>level << 3)));
  }
  return level;
}

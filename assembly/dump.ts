// Snapshot of an index as holdings (contract: dumpHoldings in src/core/index-types.ts).
// Cold path: runs over every node, but still allocation-free (the BFS queue lives in R_TMP).
//
// Row i: u32 pair (slot, hasParent) and u64 triple (ext, parentExt, local).
// Device holdings are emitted breadth-first and only when the slot holds every ancestor: a
// holding is marked reachable with bit 31 of its slot entry while the BFS runs (slots are dense
// small integers, so the bit is free), and the marks are cleared before returning.
import { NONE, FREED } from './layout';
import { Pool, rec, vecSlots, vecExts } from './pool';
import { Index, pool } from './state';
import { nFirst, nNext, nParent } from './radix';

const MARK: u32 = 0x80000000;

@inline function slotCell(r: usize, c: u32, i: u32): usize {
  return c == 1 ? r + 24 : vecSlots(<usize>load<u32>(r, 24)) + (<usize>i << 2);
}
@inline function extOf(r: usize, c: u32, i: u32): u64 {
  return c == 1 ? load<u64>(r, 8) : load<u64>(vecExts(<usize>load<u32>(r, 24)) + (<usize>i << 3));
}

let parentExtFound: u64 = 0;
/** Is `slot` a marked (reachable) holder of node n? Sets parentExtFound. */
function reachableHolder(p: Pool, n: u32, slot: u32): bool {
  const r = rec(p, n);
  const c = load<u32>(r, 20);
  for (let i: u32 = 0; i < c; i++) {
    const v = load<u32>(slotCell(r, c, i));
    if (v == (slot | MARK)) { parentExtFound = extOf(r, c, i); return true; }
  }
  return false;
}

@inline function emit(k: u32, slot: u32, hasParent: bool, ext: u64, parent: u64, local: u64, out32: usize, out64: usize): void {
  store<u32>(out32 + (<usize>k << 3), slot);
  store<u32>(out32 + (<usize>k << 3) + 4, hasParent ? 1 : 0);
  store<u64>(out64 + <usize>k * 24, ext);
  store<u64>(out64 + <usize>k * 24 + 8, parent);
  store<u64>(out64 + <usize>k * 24 + 16, local);
}

/** Device holdings breadth-first; `queue` must hold p0.live u32s. Returns rows written. */
export function dumpDevice(ix: Index, queue: usize, out32: usize, out64: usize): u32 {
  const p = ix.p0;
  let head: u32 = 0, tail: u32 = 0, k: u32 = 0;
  for (let c = nFirst(p, 0); c != NONE; c = nNext(p, c)) store<u32>(queue + (<usize>(tail++) << 2), c);
  while (head < tail) {
    const n = load<u32>(queue + (<usize>(head++) << 2));
    const r = rec(p, n);
    const c = load<u32>(r, 20);
    const parent = nParent(p, n);
    for (let i: u32 = 0; i < c; i++) {
      const cell = slotCell(r, c, i);
      const s = load<u32>(cell);
      if (parent == 0) {
        emit(k++, s, false, extOf(r, c, i), 0, load<u64>(r, 0), out32, out64);
        store<u32>(cell, s | MARK);
      } else if (reachableHolder(p, parent, s)) {
        emit(k++, s, true, extOf(r, c, i), parentExtFound, load<u64>(r, 0), out32, out64);
        store<u32>(cell, s | MARK);
      }
    }
    for (let ch = nFirst(p, n); ch != NONE; ch = nNext(p, ch)) store<u32>(queue + (<usize>(tail++) << 2), ch);
  }
  for (let i: u32 = 0; i < tail; i++) {
    const n = load<u32>(queue + (<usize>i << 2));
    const r = rec(p, n);
    const c = load<u32>(r, 20);
    for (let j: u32 = 0; j < c; j++) {
      const cell = slotCell(r, c, j);
      store<u32>(cell, load<u32>(cell) & ~MARK);
    }
  }
  return k;
}

/** Lower-tier edges, one row per owner, in pool order. Returns rows written. */
export function dumpTier(ix: Index, tier: i32, out32: usize, out64: usize): u32 {
  const p = pool(ix, tier);
  let k: u32 = 0;
  for (let e: u32 = 0; e < p.used; e++) {
    const r = rec(p, e);
    const c = load<u32>(r, 20);
    if (c == FREED) continue;
    const hasParent = load<u32>(r, 16) != 0;
    for (let i: u32 = 0; i < c; i++) {
      const s = c == 1 ? load<u32>(r, 24) : load<u32>(vecSlots(<usize>load<u32>(r, 24)) + (<usize>i << 2));
      emit(k++, s, hasParent, load<u64>(r, 32), load<u64>(r, 8), load<u64>(r, 0), out32, out64);
    }
  }
  return k;
}

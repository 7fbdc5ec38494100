// Snapshot of an index as holdings (contract: dumpHoldings in src/core/index-types.ts).
// Cold path: runs over every node, but still allocation-free (the BFS queue lives in R_TMP).
//
// Row i: u32 pair (slot, hasParent) and u64 triple (ext, parentExt, local).
// Device holdings are emitted breadth-first and only when the slot holds every ancestor: a
// holding is marked reachable with bit 31 of its slot entry (or of a single holder's hold word)
// while the BFS runs (slots are dense small integers, so the bit is free), and the marks are
// cleared before returning. A node's local hash is recovered from its path hash (radix.ts).
import { NONE, FREED, N_HASH, N_EXT0, N_PARENT, N_HOLD, N_KIDS } from './layout';
import { Pool, rec, rec32, vecSlots } from './pool';
import { Index, pool } from './state';
import { localOf } from './radix';
import { MARK, setFind, setSlotAt, setExtAt, setCount, setSlots } from './holders';

let parentExtFound: u64 = 0;
/** Is `slot` a marked (reachable) holder of node record pr? Sets parentExtFound. */
function reachableHolder(pr: usize, slot: u32): bool {
  const h = load<u32>(pr, N_HOLD);
  if ((h & 1) != 0) {
    if ((h & MARK) == 0 || ((h & ~MARK) >> 1) != slot) return false;
    parentExtFound = load<u64>(pr, N_EXT0);
    return true;
  }
  if (h == 0) return false;
  const i = setFind(<usize>h, slot);
  if (i < 0 || (setSlotAt(<usize>h, <u32>i) & MARK) == 0) return false;
  parentExtFound = setExtAt(<usize>h, <u32>i);
  return true;
}

@inline function emit(k: u32, slot: u32, hasParent: bool, ext: u64, parent: u64, local: u64, out32: usize, out64: usize): void {
  store<u32>(out32 + (<usize>k << 3), slot);
  store<u32>(out32 + (<usize>k << 3) + 4, hasParent ? 1 : 0);
  store<u64>(out64 + <usize>k * 24, ext);
  store<u64>(out64 + <usize>k * 24 + 8, parent);
  store<u64>(out64 + <usize>k * 24 + 16, local);
}

/** Append node n's children to the queue; returns the new tail. */
function pushKids(p: Pool, n: u32, queue: usize, tail: u32): u32 {
  const k = load<u32>(rec32(p, n), N_KIDS);
  if (k == NONE) return tail;
  if ((k & 1) != 0) { store<u32>(queue + (<usize>tail << 2), k >> 1); return tail + 1; }
  const c = load<u32>(<usize>k);
  memory.copy(queue + (<usize>tail << 2), <usize>k + 8, <usize>c << 2);
  return tail + c;
}

/**
 * Emit the holdings of node n (record r) whose slot holds the parent reachably (or at depth 1),
 * marking each emitted holding. Returns the new row count.
 */
function emitNode(p: Pool, n: u32, r: usize, k: u32, out32: usize, out64: usize): u32 {
  const parent = load<u32>(r, N_PARENT);
  const pr = rec32(p, parent);
  const local = localOf(load<u64>(r, N_HASH), load<u64>(pr, N_HASH));
  const h = load<u32>(r, N_HOLD);
  if ((h & 1) != 0) {
    const s = h >> 1;
    if (parent == 0) emit(k++, s, false, load<u64>(r, N_EXT0), 0, local, out32, out64);
    else if (reachableHolder(pr, s)) emit(k++, s, true, load<u64>(r, N_EXT0), parentExtFound, local, out32, out64);
    else return k;
    store<u32>(r, h | MARK, N_HOLD);
    return k;
  }
  const v = <usize>h, span = setCount(v);
  for (let i: u32 = 0; i < span; i++) {
    const s = setSlotAt(v, i);
    if (parent == 0) emit(k++, s, false, setExtAt(v, i), 0, local, out32, out64);
    else if (reachableHolder(pr, s)) emit(k++, s, true, setExtAt(v, i), parentExtFound, local, out32, out64);
    else continue;
    store<u32>(setSlots(v) + (<usize>i << 2), s | MARK);
  }
  return k;
}

/** Device holdings breadth-first; `queue` must hold p0.live u32s. Returns rows written. */
export function dumpDevice(ix: Index, queue: usize, out32: usize, out64: usize): u32 {
  const p = ix.p0;
  let head: u32 = 0, k: u32 = 0;
  let tail = pushKids(p, 0, queue, 0);
  while (head < tail) {
    const n = load<u32>(queue + (<usize>(head++) << 2));
    k = emitNode(p, n, rec32(p, n), k, out32, out64);
    tail = pushKids(p, n, queue, tail);
  }
  // Clear the marks.
  for (let i: u32 = 0; i < tail; i++) {
    const r = rec32(p, load<u32>(queue + (<usize>i << 2)));
    const h = load<u32>(r, N_HOLD);
    if ((h & 1) != 0) { store<u32>(r, h & ~MARK, N_HOLD); continue; }
    const v = <usize>h, span = setCount(v);
    for (let j: u32 = 0; j < span; j++) {
      const c = setSlots(v) + (<usize>j << 2);
      store<u32>(c, load<u32>(c) & ~MARK);
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

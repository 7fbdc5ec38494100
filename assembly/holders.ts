// Holders of a device node and children of a node (layouts in layout.ts).
//
// A node's `hold` word is its single holder, (slot << 1) | 1, with the engine hash in ext0, or a
// pointer to a holder set: entries (slot, ext) kept dense, so a match walks exactly `count` of
// them; sets of more than LINEAR_MAX entries add an index (open addressing, slot -> position,
// load <= 1/2), so the lookup a store makes for every block it adds to a shared node ("does this
// slot hold it already?") stays O(1) with thousands of holders, where a scan was O(holders).
// (An open-addressing set walked its empty cells too: at 128 holders a match took 2.3 us p50
// instead of 1.4, the empty cells' branches mispredicting.)
// A node's `kids` word is NONE, its single child (child << 1) | 1, or a child array
// [count | cap | nodes u32 x cap]; a child's kpos is its index there, so unlinking is O(1).
import { NONE, N_EXT0, N_HOLD, N_KIDS, N_KPOS } from './layout';
import { memAlloc, memFree } from './mem';
import { Pool, rec32 } from './pool';

const LINEAR_MAX: u32 = 8;
/** Dump marks (dump.ts): bit 31 of a slot entry, or of a single-holder hold word. */
export const MARK: u32 = 0x80000000;

// ---- holder sets: [count | cap | slots u32 x cap | exts u64 x cap | (cap > 8) index u32 x 2cap] ----

@inline export function setCount(v: usize): u32 { return load<u32>(v, 0); }
@inline function setCap(v: usize): u32 { return load<u32>(v, 4); }
@inline export function setSlots(v: usize): usize { return v + 8; }
@inline function setExts(v: usize): usize { return v + 8 + (<usize>load<u32>(v, 4) << 2); }
@inline function setIndex(v: usize): usize { return v + 8 + <usize>load<u32>(v, 4) * 12; }
@inline function setBytes(cap: u32): usize { return 8 + <usize>cap * (cap > LINEAR_MAX ? 20 : 12); }
/** Slot of entry i < count (bit 31 may carry a dump mark). */
@inline export function setSlotAt(v: usize, i: u32): u32 { return load<u32>(v + 8 + (<usize>i << 2)); }
@inline export function setExtAt(v: usize, i: u32): u64 { return load<u64>(setExts(v) + (<usize>i << 3)); }

/** Home of a slot in an index of `cells` (a power of two) cells. */
@inline function home(slot: u32, cells: u32): u32 { return (slot * 0x9E3779B1) >> (32 - ctz(cells)); }

function setNew(cap: u32): usize {
  const v = memAlloc(setBytes(cap));
  store<u32>(v, 0, 0);
  store<u32>(v, cap, 4);
  if (cap > LINEAR_MAX) memory.fill(setIndex(v), 0xff, <usize>cap << 3);
  return v;
}

export function setFree(v: usize): void { memFree(v, setBytes(setCap(v))); }

/** Index cell of `slot` in v's index, or of the empty cell that ends its probe. */
function indexCell(v: usize, slot: u32): u32 {
  const cells = setCap(v) << 1, mask = cells - 1, x = setIndex(v), s = setSlots(v);
  let i = home(slot, cells);
  while (true) {
    const pos = load<u32>(x + (<usize>i << 2));
    if (pos == NONE || (load<u32>(s + (<usize>pos << 2)) & ~MARK) == slot) return i;
    i = (i + 1) & mask;
  }
}

/** Position of `slot` in set v (bit 31 ignored: dump marks), or -1. */
export function setFind(v: usize, slot: u32): i32 {
  const cap = setCap(v), s = setSlots(v);
  if (cap <= LINEAR_MAX) {
    const n = setCount(v);
    for (let i: u32 = 0; i < n; i++) if ((load<u32>(s + (<usize>i << 2)) & ~MARK) == slot) return <i32>i;
    return -1;
  }
  return <i32>load<u32>(setIndex(v) + (<usize>indexCell(v, slot) << 2)); // NONE = -1
}

/** Append (slot, ext) to v, which has room and does not hold slot. */
function setPut(v: usize, slot: u32, ext: u64): void {
  const n = setCount(v);
  store<u32>(setSlots(v) + (<usize>n << 2), slot);
  store<u64>(setExts(v) + (<usize>n << 3), ext);
  if (setCap(v) > LINEAR_MAX) store<u32>(setIndex(v) + (<usize>indexCell(v, slot) << 2), n);
  store<u32>(v, n + 1, 0);
}

/** A copy of v's entries in a new set of `cap`; v is freed. */
function setResize(v: usize, cap: u32): usize {
  const w = setNew(cap), n = setCount(v);
  for (let i: u32 = 0; i < n; i++) setPut(w, setSlotAt(v, i), setExtAt(v, i));
  setFree(v);
  return w;
}

/** v with (slot, ext) added (slot not in v); may return a new set. */
function setAdd(v: usize, slot: u32, ext: u64): usize {
  if (setCount(v) == setCap(v)) v = setResize(v, setCap(v) << 1);
  setPut(v, slot, ext);
  return v;
}

/** Delete index cell i (backward shift: later cells of the run move into the hole when their home allows). */
function indexDelete(v: usize, i: u32): void {
  const cells = setCap(v) << 1, mask = cells - 1, x = setIndex(v), s = setSlots(v);
  let hole = i, j = (i + 1) & mask;
  while (true) {
    const pos = load<u32>(x + (<usize>j << 2));
    if (pos == NONE) break;
    const h = home(load<u32>(s + (<usize>pos << 2)) & ~MARK, cells);
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      store<u32>(x + (<usize>hole << 2), pos);
      hole = j;
    }
    j = (j + 1) & mask;
  }
  store<u32>(x + (<usize>hole << 2), NONE);
}

/** v without `slot` (a member); may return a new (smaller) set. */
function setRemove(v: usize, slot: u32): usize {
  const cap = setCap(v), n = setCount(v) - 1, s = setSlots(v), e = setExts(v);
  let i: u32;
  if (cap > LINEAR_MAX) {
    const c = indexCell(v, slot);
    i = load<u32>(setIndex(v) + (<usize>c << 2));
    indexDelete(v, c);
    if (i != n) store<u32>(setIndex(v) + (<usize>indexCell(v, load<u32>(s + (<usize>n << 2)) & ~MARK) << 2), i);
  } else {
    i = <u32>setFind(v, slot);
  }
  // The last entry fills the hole: entries stay dense.
  store<u32>(s + (<usize>i << 2), load<u32>(s + (<usize>n << 2)));
  store<u64>(e + (<usize>i << 3), load<u64>(e + (<usize>n << 3)));
  store<u32>(v, n, 0);
  // Shrink with the sharing: to half the capacity when a quarter full.
  if (cap > 2 && n * 4 <= cap) return setResize(v, cap >> 1);
  return v;
}

// ---- a node's holders (r = node record address) ----

/** Number of holders of node r. */
export function holderCount(r: usize): u32 {
  const h = load<u32>(r, N_HOLD);
  return (h & 1) != 0 ? 1 : h == 0 ? 0 : setCount(<usize>h);
}

/** The engine hash of the last successful `holds`. */
export let heldExt: u64 = 0;

/** Whether `slot` holds node r; sets heldExt. */
export function holds(r: usize, slot: u32): bool {
  const h = load<u32>(r, N_HOLD);
  if ((h & 1) != 0) {
    if (((h & ~MARK) >> 1) != slot) return false;
    heldExt = load<u64>(r, N_EXT0);
    return true;
  }
  if (h == 0) return false;
  const i = setFind(<usize>h, slot);
  if (i < 0) return false;
  heldExt = setExtAt(<usize>h, <u32>i);
  return true;
}

/** Change the engine hash under which `slot` (a holder) holds node r. */
export function setHeldExt(r: usize, slot: u32, ext: u64): void {
  const h = load<u32>(r, N_HOLD);
  if ((h & 1) != 0) { store<u64>(r, ext, N_EXT0); return; }
  store<u64>(setExts(<usize>h) + (<usize>setFind(<usize>h, slot) << 3), ext);
}

/** Add holder `slot` (not a holder yet) under `ext`. */
export function addHolder(r: usize, slot: u32, ext: u64): void {
  const h = load<u32>(r, N_HOLD);
  if (h == 0) {
    store<u32>(r, (slot << 1) | 1, N_HOLD);
    store<u64>(r, ext, N_EXT0);
  } else if ((h & 1) != 0) {
    const v = setNew(2);
    setPut(v, h >> 1, load<u64>(r, N_EXT0));
    setPut(v, slot, ext);
    store<u32>(r, <u32>v, N_HOLD);
  } else {
    store<u32>(r, <u32>setAdd(<usize>h, slot, ext), N_HOLD);
  }
}

/** Drop holder `slot` (a holder); returns how many holders remain. */
export function dropHolder(r: usize, slot: u32): u32 {
  const h = load<u32>(r, N_HOLD);
  if ((h & 1) != 0) { store<u32>(r, 0, N_HOLD); return 0; }
  const v = <usize>h;
  if (setCount(v) == 2) { // back to the inline form (a set of two is linear)
    const i: u32 = setSlotAt(v, 0) == slot ? 1 : 0;
    store<u32>(r, (setSlotAt(v, i) << 1) | 1, N_HOLD);
    store<u64>(r, setExtAt(v, i), N_EXT0);
    setFree(v);
    return 1;
  }
  const w = setRemove(v, slot);
  store<u32>(r, <u32>w, N_HOLD);
  return setCount(w);
}

// ---- children (pr = parent record address; children are node indexes) ----

@inline function kidsBytes(cap: u32): usize { return 8 + (<usize>cap << 2); }

/** The last child of a node with children (the cascade descends through it). */
@inline export function lastKid(pr: usize): u32 {
  const k = load<u32>(pr, N_KIDS);
  if ((k & 1) != 0) return k >> 1;
  return load<u32>(<usize>k + 8 + (<usize>(load<u32>(<usize>k) - 1) << 2));
}

/** Append child c (record cr) to the parent's children. */
export function addKid(p: Pool, pr: usize, c: u32, cr: usize): void {
  const k = load<u32>(pr, N_KIDS);
  if (k == NONE) { store<u32>(pr, (c << 1) | 1, N_KIDS); return; }
  let a: usize;
  if ((k & 1) != 0) {
    a = memAlloc(kidsBytes(4));
    store<u32>(a, 1, 0);
    store<u32>(a, 4, 4);
    store<u32>(a + 8, k >> 1);
    store<u32>(rec32(p, k >> 1), 0, N_KPOS);
  } else {
    a = <usize>k;
    const cap = load<u32>(a, 4);
    if (load<u32>(a, 0) == cap) {
      const b = memAlloc(kidsBytes(cap << 1));
      memory.copy(b, a, kidsBytes(cap));
      store<u32>(b, cap << 1, 4);
      memFree(a, kidsBytes(cap));
      a = b;
    }
  }
  const n = load<u32>(a, 0);
  store<u32>(a + 8 + (<usize>n << 2), c);
  store<u32>(cr, n, N_KPOS);
  store<u32>(a, n + 1, 0);
  store<u32>(pr, <u32>a, N_KIDS);
}

/** Remove child c (record cr) from the parent's children. */
export function dropKid(p: Pool, pr: usize, cr: usize): void {
  const k = load<u32>(pr, N_KIDS);
  if ((k & 1) != 0) { store<u32>(pr, NONE, N_KIDS); return; }
  const a = <usize>k, n = load<u32>(a, 0) - 1, cap = load<u32>(a, 4);
  const i = load<u32>(cr, N_KPOS);
  const last = load<u32>(a + 8 + (<usize>n << 2));
  store<u32>(a + 8 + (<usize>i << 2), last);
  store<u32>(rec32(p, last), i, N_KPOS);
  store<u32>(a, n, 0);
  if (n == 1) {
    store<u32>(pr, (load<u32>(a + 8) << 1) | 1, N_KIDS);
    memFree(a, kidsBytes(cap));
  } else if (cap > 4 && n * 4 <= cap) {
    const b = memAlloc(kidsBytes(cap >> 1));
    memory.copy(b, a, kidsBytes(n));
    store<u32>(b, cap >> 1, 4);
    memFree(a, kidsBytes(cap));
    store<u32>(pr, <u32>b, N_KIDS);
  }
}

/** Free a node's child array, if it has one (index teardown). */
export function freeKids(r: usize): void {
  const k = load<u32>(r, N_KIDS);
  if (k != NONE && (k & 1) == 0) memFree(<usize>k, kidsBytes(load<u32>(<usize>k, 4)));
}

// The device tier: a tree keyed by local block hash (one block per node), with per-slot
// lookups engine hash -> node. Semantics: src/core/index-types.ts (the shared contract).
//
//   node (40 bytes)
//   +0  local  u64   token-content hash (child key)
//   +8  ext0   u64   the holder's engine hash when count == 1
//   +16 parent u32   parent node (child key); root = node 0
//   +20 count  u32   holders (FREED on the free list)
//   +24 h0     u32   the holder slot when count == 1, else a holder vector pointer
//   +28 first  u32   first child       +32 next u32 next sibling (free-list link)
//   +36 prev   u32   previous sibling
//
// Invariant: every non-root node has at least one holder. A node losing its last holder takes
// its subtree with it (nothing below is reachable for anyone), so memory is reclaimed at once.
import { NONE, ST_PARENT_NOT_FOUND } from './layout';
import { Pool, rec, poolAlloc, poolRelease, vecNew, vecGrow, vecCap, vecSlots, vecExts, vecFree } from './pool';
import { recGet, recInsertAfterGet, recDelete, mix64 } from './rectable';
import { tabFirst, tabNext, tabInsert, tabDelete, tabValues, tabReset, tabCount } from './hashtab';
import { Index, slotMap, addHoldings } from './state';

@inline export function nLocal(p: Pool, n: u32): u64 { return load<u64>(rec(p, n), 0); }
@inline export function nParent(p: Pool, n: u32): u32 { return load<u32>(rec(p, n), 16); }
@inline export function nCount(p: Pool, n: u32): u32 { return load<u32>(rec(p, n), 20); }
@inline export function nH0(p: Pool, n: u32): u32 { return load<u32>(rec(p, n), 24); }
@inline export function nExt0(p: Pool, n: u32): u64 { return load<u64>(rec(p, n), 8); }
@inline export function nFirst(p: Pool, n: u32): u32 { return load<u32>(rec(p, n), 28); }
@inline export function nNext(p: Pool, n: u32): u32 { return load<u32>(rec(p, n), 32); }

/** Child of `parent` keyed by `local`, or NONE. */
@inline export function childOf(p: Pool, parent: u32, local: u64): u32 {
  return recGet(p.table, p, false, local, 0, parent);
}

function createChild(p: Pool, parent: u32, local: u64): u32 {
  const n = poolAlloc(p);
  const r = rec(p, n);
  store<u64>(r, local, 0);
  store<u32>(r, parent, 16);
  store<u32>(r, NONE, 28);
  store<u32>(r, NONE, 36);
  const pr = rec(p, parent);
  const old = load<u32>(pr, 28);
  store<u32>(r, old, 32);
  if (old != NONE) store<u32>(rec(p, old), n, 36);
  store<u32>(pr, n, 28);
  recInsertAfterGet(p.table, n);   // right after childOf() missed this key
  return n;
}

function unlink(p: Pool, n: u32): void {
  const r = rec(p, n);
  const prev = load<u32>(r, 36), next = load<u32>(r, 32);
  if (prev != NONE) store<u32>(rec(p, prev), next, 32);
  else store<u32>(rec(p, load<u32>(r, 16)), next, 28);
  if (next != NONE) store<u32>(rec(p, next), prev, 36);
  recDelete(p.table, p, false, n);
}

/** Engine hash under which `slot` holds node n, and whether it does (found -> true). */
let foundExt: u64 = 0;
function holderExt(p: Pool, n: u32, slot: u32): bool {
  const r = rec(p, n);
  const c = load<u32>(r, 20);
  if (c == 1) {
    if (load<u32>(r, 24) != slot) return false;
    foundExt = load<u64>(r, 8);
    return true;
  }
  if (c < 2) return false;
  const v = <usize>load<u32>(r, 24);
  const s = vecSlots(v);
  for (let i: u32 = 0; i < c; i++) {
    if (load<u32>(s + (<usize>i << 2)) == slot) { foundExt = load<u64>(vecExts(v) + (<usize>i << 3)); return true; }
  }
  return false;
}
export function holderExtOf(p: Pool, n: u32, slot: u32): bool { return holderExt(p, n, slot); }
export function lastFoundExt(): u64 { return foundExt; }

// --- per-slot lookups: engine hash -> node, in a hashtab keyed by the ext's fingerprint. The
// ext itself lives only in the node's holder entry, so a candidate is verified there. ---

/** Fingerprint of an engine hash in a slot's lookup. */
@inline export function extFp(ext: u64): u32 { return <u32>(mix64(ext) >> 32); }

/** The node `slot` holds under `ext` (lookup m), or NONE. */
function slotFind(p: Pool, m: usize, slot: u32, ext: u64): u32 {
  for (let v = tabFirst(m, extFp(ext)); v != NONE; v = tabNext()) if (holderExt(p, v, slot) && foundExt == ext) return v;
  return NONE;
}

function setHolderExt(p: Pool, n: u32, slot: u32, ext: u64): void {
  const r = rec(p, n);
  const c = load<u32>(r, 20);
  if (c == 1) { store<u64>(r, ext, 8); return; }
  const v = <usize>load<u32>(r, 24);
  const s = vecSlots(v);
  for (let i: u32 = 0; i < c; i++) {
    if (load<u32>(s + (<usize>i << 2)) == slot) { store<u64>(vecExts(v) + (<usize>i << 3), ext); return; }
  }
}

function addHolder(p: Pool, n: u32, slot: u32, ext: u64): void {
  const r = rec(p, n);
  const c = load<u32>(r, 20);
  if (c == 0) {
    store<u32>(r, slot, 24);
    store<u64>(r, ext, 8);
  } else {
    let v: usize;
    if (c == 1) {
      v = vecNew(4, true);
      store<u32>(vecSlots(v), load<u32>(r, 24));
      store<u64>(vecExts(v), load<u64>(r, 8));
    } else {
      v = <usize>load<u32>(r, 24);
      if (c == vecCap(v)) v = vecGrow(v, c, true);
    }
    store<u32>(vecSlots(v) + (<usize>c << 2), slot);
    store<u64>(vecExts(v) + (<usize>c << 3), ext);
    store<u32>(r, <u32>v, 24);
  }
  store<u32>(r, c + 1, 20);
}

/** Drop `slot` from n's holders (it must hold n); returns the remaining holder count. */
function dropHolder(p: Pool, n: u32, slot: u32): u32 {
  const r = rec(p, n);
  const c = load<u32>(r, 20);
  if (c == 1) { store<u32>(r, 0, 20); return 0; }
  const v = <usize>load<u32>(r, 24);
  const s = vecSlots(v), e = vecExts(v);
  let i: u32 = 0;
  while (load<u32>(s + (<usize>i << 2)) != slot) i++;
  const last = c - 1;
  store<u32>(s + (<usize>i << 2), load<u32>(s + (<usize>last << 2)));
  store<u64>(e + (<usize>i << 3), load<u64>(e + (<usize>last << 3)));
  if (last == 1) {
    store<u32>(r, load<u32>(s), 24);
    store<u64>(r, load<u64>(e), 8);
    vecFree(v, true);
  }
  store<u32>(r, last, 20);
  return last;
}

/** Delete every holder's lookup entry for node n and free its holder vector. */
function releaseHolders(ix: Index, p: Pool, n: u32): void {
  const r = rec(p, n);
  const c = load<u32>(r, 20);
  if (c == 0) return;
  if (c == 1) {
    tabDelete(slotMap(ix, load<u32>(r, 24), 0), extFp(load<u64>(r, 8)), n);
  } else {
    const v = <usize>load<u32>(r, 24);
    for (let i: u32 = 0; i < c; i++) {
      tabDelete(slotMap(ix, load<u32>(vecSlots(v) + (<usize>i << 2)), 0), extFp(load<u64>(vecExts(v) + (<usize>i << 3))), n);
    }
    vecFree(v, true);
  }
  addHoldings(ix, 0, -<i32>c);
  store<u32>(r, 0, 20);
}

/** Delete node n (no holders left) and its whole subtree, post-order, without a stack. */
function deleteSubtree(ix: Index, p: Pool, n: u32): void {
  let cur = n;
  while (true) {
    while (nFirst(p, cur) != NONE) cur = nFirst(p, cur);
    const parent = nParent(p, cur);
    releaseHolders(ix, p, cur);
    unlink(p, cur);
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
  const p = ix.p0;
  const m = slotMap(ix, slot, 0);
  let cur: u32 = 0;
  if (hasParent) {
    cur = slotFind(p, m, slot, parent);
    if (cur == NONE) return ST_PARENT_NOT_FOUND;
  }
  for (let i = 0; i < n; i++) {
    const ext = load<u64>(exts + (<usize>i << 3));
    const local = load<u64>(locals + (<usize>i << 3));
    const held = slotFind(p, m, slot, ext);
    let child = childOf(p, cur, local);
    if (held != NONE) {
      if (held != child) return i;      // the slot uses this engine hash elsewhere: stop
      cur = child;
      continue;
    }
    if (child == NONE) {
      child = createChild(p, cur, local);
      addHolder(p, child, slot, ext);
      addHoldings(ix, 0, 1);
      tabInsert(m, extFp(ext), child);
    } else if (holderExt(p, child, slot)) {
      tabDelete(m, extFp(foundExt), child); // re-key: same node, new engine hash
      setHolderExt(p, child, slot, ext);
      tabInsert(m, extFp(ext), child);
    } else {
      addHolder(p, child, slot, ext);
      addHoldings(ix, 0, 1);
      tabInsert(m, extFp(ext), child);
    }
    cur = child;
  }
  return n;
}

/** Removed(exts) for `slot`; returns how many were held. */
export function deviceRemove(ix: Index, slot: u32, exts: usize, n: i32): i32 {
  const p = ix.p0;
  const m = slotMap(ix, slot, 0);
  let found = 0;
  for (let i = 0; i < n; i++) {
    const ext = load<u64>(exts + (<usize>i << 3));
    const node = slotFind(p, m, slot, ext);
    if (node == NONE) continue;
    tabDelete(m, extFp(ext), node);
    found++;
    addHoldings(ix, 0, -1);
    if (dropHolder(p, node, slot) == 0) deleteSubtree(ix, p, node);
  }
  return found;
}

/**
 * Every device block of `slot` goes (Cleared). The slot's map is emptied first, then each node
 * is dropped; a node already freed by an earlier cascade is recognised by its FREED count
 * (no allocation happens meanwhile, so freed records are not reused during the loop).
 */
export function deviceClear(ix: Index, slot: u32, work: usize): void {
  const p = ix.p0;
  const m = slotMap(ix, slot, 0);
  if (tabCount(m) == 0) return;
  const k = tabValues(m, work);
  // Reset the map (its entries are dropped below without per-entry deletes).
  tabReset(m);
  for (let i: u32 = 0; i < k; i++) {
    const node = load<u32>(work + (<usize>i << 2));
    if (nCount(p, node) == 0xfffffffe) continue;  // FREED by an earlier cascade
    if (!holderExt(p, node, slot)) continue;
    addHoldings(ix, 0, -1);
    if (dropHolder(p, node, slot) == 0) deleteSubtree(ix, p, node);
  }
}

// Host / disk / external tiers: continuation edges (algorithms §3.2; contract in
// src/core/index/index-types.ts). An edge is unique per key (parent engine hash | none, local
// hash) and records the child engine hash plus its owner slots (record layout: layout.ts). No
// prefix scoring of its own: a match continues each slot from where its device (or previous
// tier) prefix ended (match.ts).
import { NONE } from './layout';
import { Pool, rec, poolAlloc, poolRelease, vecNew, vecGrow, vecCap, vecSlots, vecFree } from './pool';
import { recGet, recInsert, recDelete } from './rectable';
import { tabFirst, tabNext, tabInsert, tabDelete, tabValues, tabReset, tabCount } from './hashtab';
import { extFp } from './radix';
import { Index, pool, slotMap, addHoldings } from './state';

@inline export function eChild(p: Pool, e: u32): u64 { return load<u64>(rec(p, e), 32); }
@inline export function eCount(p: Pool, e: u32): u32 { return load<u32>(rec(p, e), 20); }

/** Edge keyed (parent?, local), or NONE. */
@inline export function edgeOf(p: Pool, hasParent: bool, parent: u64, local: u64): u32 {
  return recGet(p.table, p, true, local, hasParent ? parent : 0, hasParent ? 1 : 0);
}

/**
 * The edge a slot's tier lookup m maps `ext` to, or NONE. Every edge in m has child ext = the
 * key it is stored under, so a candidate is verified by its child ext.
 */
export function slotEdge(p: Pool, m: usize, ext: u64): u32 {
  for (let v = tabFirst(m, extFp(ext)); v != NONE; v = tabNext()) if (eChild(p, v) == ext) return v;
  return NONE;
}

function addOwner(p: Pool, e: u32, slot: u32): void {
  const r = rec(p, e);
  const c = load<u32>(r, 20);
  if (c == 0) {
    store<u32>(r, slot, 24);
  } else {
    let v: usize;
    if (c == 1) {
      v = vecNew(4);
      store<u32>(vecSlots(v), load<u32>(r, 24));
    } else {
      v = <usize>load<u32>(r, 24);
      if (c == vecCap(v)) v = vecGrow(v, c);
    }
    store<u32>(vecSlots(v) + (<usize>c << 2), slot);
    store<u32>(r, <u32>v, 24);
  }
  store<u32>(r, c + 1, 20);
}

/** Drop an owner; frees the edge when it was the last. */
function dropOwner(p: Pool, e: u32, slot: u32): void {
  const r = rec(p, e);
  const c = load<u32>(r, 20);
  if (c == 1) {
    recDelete(p.table, p, true, e);
    poolRelease(p, e);
    return;
  }
  const v = <usize>load<u32>(r, 24);
  const s = vecSlots(v);
  let i: u32 = 0;
  while (load<u32>(s + (<usize>i << 2)) != slot) i++;
  store<u32>(s + (<usize>i << 2), load<u32>(s + (<usize>(c - 1) << 2)));
  if (c - 1 == 1) { store<u32>(r, load<u32>(s), 24); vecFree(v); }
  store<u32>(r, c - 1, 20);
}

/** Stored on a lower tier; returns blocks applied (ignored blocks are not counted). */
export function tierStore(ix: Index, slot: u32, tier: i32, hasParent: bool, parent: u64, exts: usize, locals: usize, n: i32): i32 {
  const p = pool(ix, tier);
  const m = slotMap(ix, slot, tier);
  let applied = 0;
  let hp = hasParent, par = parent;
  for (let i = 0; i < n; i++) {
    const ext = load<u64>(exts + (<usize>i << 3));
    const local = load<u64>(locals + (<usize>i << 3));
    let e = edgeOf(p, hp, par, local);
    const held = slotEdge(p, m, ext);
    const conflict = (e != NONE && eChild(p, e) != ext) || (held != NONE && held != e);
    if (!conflict) {
      if (e == NONE) {
        e = poolAlloc(p);
        const r = rec(p, e);
        store<u64>(r, local, 0);
        store<u64>(r, hp ? par : 0, 8);
        store<u32>(r, hp ? 1 : 0, 16);
        store<u64>(r, ext, 32);
        recInsert(p.table, p, true, e);
      }
      if (held == NONE) {
        addOwner(p, e, slot);
        tabInsert(m, extFp(ext), e);
        addHoldings(ix, tier, 1);
      }
      applied++;
    }
    hp = true;
    par = ext;
  }
  return applied;
}

/** Removed on a lower tier; returns how many were held. */
export function tierRemove(ix: Index, slot: u32, tier: i32, exts: usize, n: i32): i32 {
  const p = pool(ix, tier);
  const m = slotMap(ix, slot, tier);
  let found = 0;
  for (let i = 0; i < n; i++) {
    const ext = load<u64>(exts + (<usize>i << 3));
    const e = slotEdge(p, m, ext);
    if (e == NONE) continue;
    tabDelete(m, extFp(ext), e);
    found++;
    addHoldings(ix, tier, -1);
    dropOwner(p, e, slot);
  }
  return found;
}

/** Every block of `slot` on this tier goes; `work` holds a u32 per block of the slot on the tier. */
export function tierClear(ix: Index, slot: u32, tier: i32, work: usize): void {
  const p = pool(ix, tier);
  const m = slotMap(ix, slot, tier);
  const cnt = tabCount(m);
  if (cnt == 0) return;
  const k = tabValues(m, work);
  for (let i: u32 = 0; i < k; i++) dropOwner(p, load<u32>(work + (<usize>i << 2)), slot);
  tabReset(m);
  addHoldings(ix, tier, -<i32>cnt);
}

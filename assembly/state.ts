// One prefix index per partition: the device tree, three continuation tiers, per-slot lookups
// and the per-slot match work arrays. Indexes are addressed from TS by small integer handles.
//
//   Index (unmanaged)
//   +-- pools[0..3]   Pool: tier 0 = tree nodes (radix.ts), tiers 1..3 = edges (tiers.ts)
//   +-- maps          usize[slotCap * 4]: per (slot, tier) a hashtab.ts table engine hash -> record
//   +-- depth/stamp   u32[slotCap]: match work (stamp == epoch marks a slot touched this match)
//   +-- last          u64[slotCap]: engine hash at the slot's current continuation point
//   +-- pos           u32[slotCap]: continuation position (lower tiers)
//   +-- orphans       device holdings (slot, node) where the slot does not hold node's parent
import { NONE, TIER_COUNT, NODE_BYTES, EDGE_BYTES, N_PARENT, N_KIDS, N_KPOS } from './layout';
import { Pool, poolNew, poolFree, poolAlloc, rec } from './pool';
import { tabNew, tabFree } from './hashtab';
import { memAlloc, memAllocZero, memFree } from './mem';


@unmanaged export class Index {
  p0: Pool; p1: Pool; p2: Pool; p3: Pool;
  maps: usize;
  slotCap: u32;
  depth: usize;
  stamp: usize;
  last: usize;
  pos: usize;
  epoch: u32;
  h0: u32; h1: u32; h2: u32; h3: u32;   // holdings per tier (sum of lookup sizes)
  orphans: u32;   // device holdings whose slot does not hold the node's parent (radix.ts)
}

@inline export function pool(ix: Index, tier: i32): Pool {
  return tier == 0 ? ix.p0 : tier == 1 ? ix.p1 : tier == 2 ? ix.p2 : ix.p3;
}

@inline export function holdings(ix: Index, tier: i32): u32 {
  return tier == 0 ? ix.h0 : tier == 1 ? ix.h1 : tier == 2 ? ix.h2 : ix.h3;
}

@inline export function addHoldings(ix: Index, tier: i32, d: i32): void {
  if (tier == 0) ix.h0 += d; else if (tier == 1) ix.h1 += d; else if (tier == 2) ix.h2 += d; else ix.h3 += d;
}

/** The (slot, tier) lookup map; allocated on first use (cold). */
@inline export function slotMap(ix: Index, slot: u32, tier: i32): usize {
  const cell = ix.maps + ((<usize>slot * TIER_COUNT + tier) << 2);
  let m = load<usize>(cell);
  if (m == 0) { m = tabNew(); store<usize>(cell, m); }
  return m;
}

/** The (slot, tier) map if allocated, else 0. */
@inline export function slotMapIfAny(ix: Index, slot: u32, tier: i32): usize {
  return load<usize>(ix.maps + ((<usize>slot * TIER_COUNT + tier) << 2));
}

const MAX_INDEXES = 4096;
const handles = memory.data(MAX_INDEXES * 4);

export function indexOf(h: i32): Index {
  return changetype<Index>(h >= 0 && h < MAX_INDEXES ? load<usize>(handles + (<usize>h << 2)) : 0);
}

function growArray(p: usize, oldBytes: usize, newBytes: usize): usize {
  const q = memAllocZero(newBytes);
  if (p != 0) { memory.copy(q, p, oldBytes); memFree(p, oldBytes); }
  return q;
}

function newPool(size: u32, link: u32): Pool {
  const p = poolNew(size, link);
  p.table = tabNew();
  return p;
}

function freePool(p: Pool): void {
  tabFree(p.table);
  poolFree(p);
}

/** Make room for slots [0, n) (cold). */
export function ensureSlots(ix: Index, n: u32): void {
  if (n <= ix.slotCap) return;
  let cap: u32 = ix.slotCap == 0 ? 8 : ix.slotCap;
  while (cap < n) cap <<= 1;
  const o = <usize>ix.slotCap, c = <usize>cap;
  ix.maps = growArray(ix.maps, o * TIER_COUNT * 4, c * TIER_COUNT * 4);
  ix.depth = growArray(ix.depth, o * 4, c * 4);
  ix.stamp = growArray(ix.stamp, o * 4, c * 4);
  ix.last = growArray(ix.last, o * 8, c * 8);
  ix.pos = growArray(ix.pos, o * 4, c * 4);
  ix.slotCap = cap;
}

/** A new empty index; returns its handle or -1 when all handles are in use. */
export function indexCreate(): i32 {
  for (let h = 0; h < MAX_INDEXES; h++) {
    if (load<usize>(handles + (<usize>h << 2)) != 0) continue;
    const ix = changetype<Index>(memAllocZero(offsetof<Index>()));
    ix.p0 = newPool(NODE_BYTES, <u32>N_KPOS);
    ix.p1 = newPool(EDGE_BYTES, 28);
    ix.p2 = newPool(EDGE_BYTES, 28);
    ix.p3 = newPool(EDGE_BYTES, 28);
    // Node 0 is the root: path hash 0, parent NONE, no holders, never freed.
    const root = poolAlloc(ix.p0);
    store<u32>(rec(ix.p0, root), NONE, N_PARENT);
    store<u32>(rec(ix.p0, root), NONE, N_KIDS);
    ensureSlots(ix, 8);
    store<usize>(handles + (<usize>h << 2), changetype<usize>(ix));
    return h;
  }
  return -1;
}

/** Free an index and everything it owns. Holder vectors are freed by the caller first. */
export function indexRelease(h: i32): void {
  const ix = indexOf(h);
  if (changetype<usize>(ix) == 0) return;
  for (let s: u32 = 0; s < ix.slotCap; s++) {
    for (let t = 0; t < TIER_COUNT; t++) {
      const m = slotMapIfAny(ix, s, t);
      if (m != 0) tabFree(m);
    }
  }
  freePool(ix.p0); freePool(ix.p1); freePool(ix.p2); freePool(ix.p3);
  const c = <usize>ix.slotCap;
  memFree(ix.maps, c * TIER_COUNT * 4); memFree(ix.depth, c * 4); memFree(ix.stamp, c * 4);
  memFree(ix.last, c * 8); memFree(ix.pos, c * 4);
  memFree(changetype<usize>(ix), offsetof<Index>());
  store<usize>(handles + (<usize>h << 2), 0);
}

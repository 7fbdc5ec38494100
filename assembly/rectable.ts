// Open-addressing set of record indexes, keyed by fields stored in the records themselves.
//
//   header (16 bytes): +0 cells ptr, +4 shift, +8 count, +12 useA;   cells: u32[cap], NONE = empty
//
// Used for the tree's child links (key = parent node, local hash) and for the tiers' edges
// (key = parent engine hash or none, local hash). A cell holds only the 4-byte record index;
// equality is checked against the record, which costs one extra memory access per probe but
// keeps the table at ~6 bytes per record instead of 16 (measured: bench/index.bench.ts, memory
// per (block, worker) pair). The record layout gives the key fields at fixed offsets:
//   record +0: local hash u64;  +8: key u64 (parent ext; edges only, useA = 1);  +16: key u32
//   (parent node for tree nodes; has-parent flag for edges) — see radix.ts / tiers.ts diagrams.
import { NONE } from './layout';

@inline function cellsPtr(t: usize): usize { return load<usize>(t, 0); }
@inline function shiftOf(t: usize): u32 { return load<u32>(t, 4); }
@inline export function recCount(t: usize): u32 { return load<u32>(t, 8); }
@inline function capOf(t: usize): u32 { return <u32>1 << (64 - shiftOf(t)); }
@inline function useA(t: usize): bool { return load<u32>(t, 12) != 0; }

/** Home cell of a key: Fibonacci hashing of the mixed (local, a, b) key. */
@inline function homeOf(local: u64, a: u64, b: u32, shift: u32): u32 {
  const k = local ^ ((a + <u64>b + 1) * 0xC2B2AE3D27D4EB4F);
  return <u32>((k * 0x9E3779B97F4A7C15) >> <u64>shift);
}

@inline function recMatches(rec: usize, local: u64, a: u64, b: u32, withA: bool): bool {
  return load<u64>(rec, 0) == local && load<u32>(rec, 16) == b && (!withA || load<u64>(rec, 8) == a);
}

function allocCells(t: usize, bits: u32): void {
  const n = <usize>1 << bits;
  const c = heap.alloc(n << 2);
  memory.fill(c, 0xff, n << 2);
  store<usize>(t, c, 0);
  store<u32>(t, 64 - bits, 4);
}

/** A new empty table (cold). */
export function recNew(withA: bool): usize {
  const t = heap.alloc(16);
  allocCells(t, 4);
  store<u32>(t, 0, 8);
  store<u32>(t, withA ? 1 : 0, 12);
  return t;
}

export function recFree(t: usize): void { heap.free(cellsPtr(t)); heap.free(t); }

/** Empty cell where the last unsuccessful recGet stopped (see recInsertAfterGet). */
let lastEmpty: u32 = 0;

/** Record index with key (local, a, b), or NONE. `base`/`size`: the record pool. */
export function recGet(t: usize, base: usize, size: usize, local: u64, a: u64, b: u32): u32 {
  const c = cellsPtr(t);
  const mask = capOf(t) - 1;
  const withA = useA(t);
  if (!withA) a = 0;
  let i = homeOf(local, a, b, shiftOf(t));
  while (true) {
    const v = load<u32>(c + (<usize>i << 2));
    if (v == NONE) { lastEmpty = i; return NONE; }
    if (recMatches(base + <usize>v * size, local, a, b, withA)) return v;
    i = (i + 1) & mask;
  }
}

@inline function recHome(base: usize, size: usize, v: u32, shift: u32, withA: bool): u32 {
  const rec = base + <usize>v * size;
  return homeOf(load<u64>(rec, 0), withA ? load<u64>(rec, 8) : 0, load<u32>(rec, 16), shift);
}

/** Insert record v (its key must be absent). */
export function recInsert(t: usize, base: usize, size: usize, v: u32): void {
  const withA = useA(t);
  let count = recCount(t) + 1;
  if (<u64>count * 4 > <u64>capOf(t) * 3) {
    const old = cellsPtr(t), oldCap = capOf(t);
    allocCells(t, 64 - shiftOf(t) + 1);
    const c = cellsPtr(t), shift = shiftOf(t), mask = capOf(t) - 1;
    for (let i: u32 = 0; i < oldCap; i++) {
      const w = load<u32>(old + (<usize>i << 2));
      if (w == NONE) continue;
      let j = recHome(base, size, w, shift, withA);
      while (load<u32>(c + (<usize>j << 2)) != NONE) j = (j + 1) & mask;
      store<u32>(c + (<usize>j << 2), w);
    }
    heap.free(old);
  }
  const c = cellsPtr(t), shift = shiftOf(t), mask = capOf(t) - 1;
  let i = recHome(base, size, v, shift, withA);
  while (load<u32>(c + (<usize>i << 2)) != NONE) i = (i + 1) & mask;
  store<u32>(c + (<usize>i << 2), v);
  store<u32>(t, count, 8);
}

/**
 * Insert record v whose key the immediately preceding recGet on this table reported absent:
 * reuses that probe's empty cell (one cache miss less per new node).
 */
export function recInsertAfterGet(t: usize, base: usize, size: usize, v: u32): void {
  const count = recCount(t) + 1;
  if (<u64>count * 4 > <u64>capOf(t) * 3) { recInsert(t, base, size, v); return; }
  store<u32>(cellsPtr(t) + (<usize>lastEmpty << 2), v);
  store<u32>(t, count, 8);
}

/** Remove record v (present). Backward-shift deletion. */
export function recDelete(t: usize, base: usize, size: usize, v: u32): void {
  const withA = useA(t);
  const c = cellsPtr(t), shift = shiftOf(t), mask = capOf(t) - 1;
  let i = recHome(base, size, v, shift, withA);
  while (true) {
    const w = load<u32>(c + (<usize>i << 2));
    if (w == v) break;
    if (w == NONE) return;
    i = (i + 1) & mask;
  }
  let hole = i;
  let j = (i + 1) & mask;
  while (true) {
    const w = load<u32>(c + (<usize>j << 2));
    if (w == NONE) break;
    const h = recHome(base, size, w, shift, withA);
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      store<u32>(c + (<usize>hole << 2), w);
      hole = j;
    }
    j = (j + 1) & mask;
  }
  store<u32>(c + (<usize>hole << 2), NONE);
  store<u32>(t, recCount(t) - 1, 8);
}

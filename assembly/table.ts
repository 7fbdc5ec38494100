// Open-addressing u64 -> u32 map over linear memory (per-slot lookups: engine hash -> node/edge).
//
//   header (16 bytes)              keys: u64[cap]          vals: u32[cap]
//   +0 keys ptr  +4 vals ptr       key of cell i           NONE = empty cell
//   +8 shift     +12 count
//
// Linear probing from a Fibonacci-hashed home cell (multiplicative hashing takes the high bits,
// so structured keys such as small integers still spread). Deletion shifts later cells back
// instead of leaving tombstones, so probe lengths stay short under churn and memory is reused.
// Capacity doubles past 80% load: 12 bytes a cell, ~21 bytes per entry on average.
import { NONE } from './layout';

const MIN_BITS: u32 = 3;

@inline function cells(bits: u32): u32 { return <u32>1 << bits; }

@inline export function mapKeys(m: usize): usize { return load<usize>(m, 0); }
@inline export function mapVals(m: usize): usize { return load<usize>(m, 4); }
@inline function mapShift(m: usize): u32 { return load<u32>(m, 8); }
@inline export function mapCount(m: usize): u32 { return load<u32>(m, 12); }
@inline export function mapCap(m: usize): u32 { return cells(64 - mapShift(m)); }

@inline function home(key: u64, shift: u32): u32 {
  return <u32>((key * 0x9E3779B97F4A7C15) >> <u64>shift);
}

function allocCells(m: usize, bits: u32): void {
  const n = cells(bits);
  const keys = heap.alloc(<usize>n << 3);
  const vals = heap.alloc(<usize>n << 2);
  memory.fill(vals, 0xff, <usize>n << 2);
  store<usize>(m, keys, 0);
  store<usize>(m, vals, 4);
  store<u32>(m, 64 - bits, 8);
}

/** A new empty map (cold). */
export function mapNew(): usize {
  const m = heap.alloc(16);
  allocCells(m, MIN_BITS);
  store<u32>(m, 0, 12);
  return m;
}

/** Free a map and its cells. */
export function mapFree(m: usize): void {
  heap.free(mapKeys(m));
  heap.free(mapVals(m));
  heap.free(m);
}

/** Cell where the last mapGet stopped: the key's cell, or the empty cell it would go into. */
export let lastCell: u32 = 0;

/** Value for key, or NONE. */
export function mapGet(m: usize, key: u64): u32 {
  const keys = mapKeys(m), vals = mapVals(m);
  const mask = mapCap(m) - 1;
  let i = home(key, mapShift(m));
  while (true) {
    const v = load<u32>(vals + (<usize>i << 2));
    if (v == NONE || load<u64>(keys + (<usize>i << 3)) == key) { lastCell = i; return v; }
    i = (i + 1) & mask;
  }
}

/**
 * Insert a key that the immediately preceding mapGet(m, key) reported absent, into the cell it
 * stopped at: saves the second probe (a cache miss per stored block on large maps).
 */
export function mapInsertAfterGet(m: usize, key: u64, val: u32): void {
  const count = mapCount(m) + 1;
  if (<u64>count * 5 > <u64>mapCap(m) * 4) { mapSet(m, key, val); return; }
  store<u64>(mapKeys(m) + (<usize>lastCell << 3), key);
  store<u32>(mapVals(m) + (<usize>lastCell << 2), val);
  store<u32>(m, count, 12);
}

function insertFresh(keys: usize, vals: usize, shift: u32, mask: u32, key: u64, val: u32): void {
  let i = home(key, shift);
  while (load<u32>(vals + (<usize>i << 2)) != NONE) i = (i + 1) & mask;
  store<u64>(keys + (<usize>i << 3), key);
  store<u32>(vals + (<usize>i << 2), val);
}

function grow(m: usize): void {
  const oldKeys = mapKeys(m), oldVals = mapVals(m), oldCap = mapCap(m);
  const bits = 64 - mapShift(m) + 1;
  allocCells(m, bits);
  const keys = mapKeys(m), vals = mapVals(m), shift = mapShift(m), mask = mapCap(m) - 1;
  for (let i: u32 = 0; i < oldCap; i++) {
    const v = load<u32>(oldVals + (<usize>i << 2));
    if (v != NONE) insertFresh(keys, vals, shift, mask, load<u64>(oldKeys + (<usize>i << 3)), v);
  }
  heap.free(oldKeys);
  heap.free(oldVals);
}

/** Insert or overwrite. */
export function mapSet(m: usize, key: u64, val: u32): void {
  const keys = mapKeys(m), vals = mapVals(m);
  const mask = mapCap(m) - 1;
  let i = home(key, mapShift(m));
  while (true) {
    const v = load<u32>(vals + (<usize>i << 2));
    if (v == NONE) break;
    if (load<u64>(keys + (<usize>i << 3)) == key) { store<u32>(vals + (<usize>i << 2), val); return; }
    i = (i + 1) & mask;
  }
  const count = mapCount(m) + 1;
  if (<u64>count * 5 > <u64>mapCap(m) * 4) {
    grow(m);
    insertFresh(mapKeys(m), mapVals(m), mapShift(m), mapCap(m) - 1, key, val);
  } else {
    store<u64>(keys + (<usize>i << 3), key);
    store<u32>(vals + (<usize>i << 2), val);
  }
  store<u32>(m, count, 12);
}

/** Delete key; returns its value or NONE. Backward-shift deletion (no tombstones). */
export function mapDelete(m: usize, key: u64): u32 {
  const keys = mapKeys(m), vals = mapVals(m), shift = mapShift(m);
  const mask = mapCap(m) - 1;
  let i = home(key, shift);
  let v: u32;
  while (true) {
    v = load<u32>(vals + (<usize>i << 2));
    if (v == NONE) return NONE;
    if (load<u64>(keys + (<usize>i << 3)) == key) break;
    i = (i + 1) & mask;
  }
  let hole = i;
  let j = (i + 1) & mask;
  while (true) {
    const vj = load<u32>(vals + (<usize>j << 2));
    if (vj == NONE) break;
    const kj = load<u64>(keys + (<usize>j << 3));
    const h = home(kj, shift);
    // Move j into the hole when its home is not in the cyclic range (hole, j].
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      store<u64>(keys + (<usize>hole << 3), kj);
      store<u32>(vals + (<usize>hole << 2), vj);
      hole = j;
    }
    j = (j + 1) & mask;
  }
  store<u32>(vals + (<usize>hole << 2), NONE);
  store<u32>(m, mapCount(m) - 1, 12);
  return v;
}

/** Remove every entry and give large cell arrays back to the allocator. */
export function mapReset(m: usize): void {
  heap.free(mapKeys(m));
  heap.free(mapVals(m));
  allocCells(m, MIN_BITS);
  store<u32>(m, 0, 12);
}

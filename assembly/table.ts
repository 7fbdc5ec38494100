// Open-addressing u64 -> u32 map over linear memory (per-slot lookups: engine hash -> node/edge).
//
//   header (16 bytes)              cells: 12 bytes each, packed: key u64 | val u32
//   +0 cells ptr +4 (unused)       (val NONE = empty cell; wasm loads need no alignment)
//   +8 shift     +12 count
//
// Linear probing from a Fibonacci-hashed home cell (multiplicative hashing takes the high bits,
// so structured keys such as small integers still spread). Deletion shifts later cells back
// instead of leaving tombstones, so probe lengths stay short under churn and memory is reused.
// Capacity doubles past 80% load: 12 bytes a cell, ~21 bytes per entry on average. Key and
// value share a cell so a probe touches one cache line, not two (measured: held-block store
// path, bench/index.bench.ts; separate key/value arrays cost a second miss per lookup).
import { NONE } from './layout';
import { memAlloc, memFree } from './mem';

const MIN_BITS: u32 = 3;

@inline function cells(bits: u32): u32 { return <u32>1 << bits; }

@inline function mapCells(m: usize): usize { return load<usize>(m, 0); }
@inline function kAt(c: usize, i: u32): u64 { return load<u64>(c + <usize>i * 12); }
@inline function vAt(c: usize, i: u32): u32 { return load<u32>(c + <usize>i * 12 + 8); }
@inline function put(c: usize, i: u32, k: u64, v: u32): void { store<u64>(c + <usize>i * 12, k); store<u32>(c + <usize>i * 12 + 8, v); }
@inline function setV(c: usize, i: u32, v: u32): void { store<u32>(c + <usize>i * 12 + 8, v); }
@inline function mapShift(m: usize): u32 { return load<u32>(m, 8); }
@inline export function mapCount(m: usize): u32 { return load<u32>(m, 12); }
@inline export function mapCap(m: usize): u32 { return cells(64 - mapShift(m)); }

@inline function home(key: u64, shift: u32): u32 {
  return <u32>((key * 0x9E3779B97F4A7C15) >> <u64>shift);
}

function allocCells(m: usize, bits: u32): void {
  const n = cells(bits);
  const c = memAlloc(<usize>n * 12);
  for (let i: u32 = 0; i < n; i++) setV(c, i, NONE);
  store<usize>(m, c, 0);
  store<u32>(m, 64 - bits, 8);
}

/** Value of cell i (NONE when empty): for iterating every entry. */
@inline export function mapCellVal(m: usize, i: u32): u32 { return vAt(mapCells(m), i); }

/** A new empty map (cold). */
export function mapNew(): usize {
  const m = memAlloc(16);
  allocCells(m, MIN_BITS);
  store<u32>(m, 0, 12);
  return m;
}

/** Free a map and its cells. */
export function mapFree(m: usize): void {
  memFree(mapCells(m), <usize>mapCap(m) * 12);
  memFree(m, 16);
}

/** Cell where the last mapGet stopped: the key's cell, or the empty cell it would go into. */
export let lastCell: u32 = 0;

/** Value for key, or NONE. */
export function mapGet(m: usize, key: u64): u32 {
  const c = mapCells(m);
  const mask = mapCap(m) - 1;
  let i = home(key, mapShift(m));
  while (true) {
    const v = vAt(c, i);
    if (v == NONE || kAt(c, i) == key) { lastCell = i; return v; }
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
  put(mapCells(m), lastCell, key, val);
  store<u32>(m, count, 12);
}

function insertFresh(c: usize, shift: u32, mask: u32, key: u64, val: u32): void {
  let i = home(key, shift);
  while (vAt(c, i) != NONE) i = (i + 1) & mask;
  put(c, i, key, val);
}

function grow(m: usize): void {
  const old = mapCells(m), oldCap = mapCap(m);
  const bits = 64 - mapShift(m) + 1;
  allocCells(m, bits);
  const c = mapCells(m), shift = mapShift(m), mask = mapCap(m) - 1;
  for (let i: u32 = 0; i < oldCap; i++) {
    const v = vAt(old, i);
    if (v != NONE) insertFresh(c, shift, mask, kAt(old, i), v);
  }
  memFree(old, <usize>oldCap * 12);
}

/** Insert or overwrite. */
export function mapSet(m: usize, key: u64, val: u32): void {
  const c = mapCells(m);
  const mask = mapCap(m) - 1;
  let i = home(key, mapShift(m));
  while (true) {
    const v = vAt(c, i);
    if (v == NONE) break;
    if (kAt(c, i) == key) { setV(c, i, val); return; }
    i = (i + 1) & mask;
  }
  const count = mapCount(m) + 1;
  if (<u64>count * 5 > <u64>mapCap(m) * 4) {
    grow(m);
    insertFresh(mapCells(m), mapShift(m), mapCap(m) - 1, key, val);
  } else {
    put(c, i, key, val);
  }
  store<u32>(m, count, 12);
}

/** Delete key; returns its value or NONE. Backward-shift deletion (no tombstones). */
export function mapDelete(m: usize, key: u64): u32 {
  const c = mapCells(m), shift = mapShift(m);
  const mask = mapCap(m) - 1;
  let i = home(key, shift);
  let v: u32;
  while (true) {
    v = vAt(c, i);
    if (v == NONE) return NONE;
    if (kAt(c, i) == key) break;
    i = (i + 1) & mask;
  }
  let hole = i;
  let j = (i + 1) & mask;
  while (true) {
    const vj = vAt(c, j);
    if (vj == NONE) break;
    const kj = kAt(c, j);
    const h = home(kj, shift);
    // Move j into the hole when its home is not in the cyclic range (hole, j].
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      put(c, hole, kj, vj);
      hole = j;
    }
    j = (j + 1) & mask;
  }
  setV(c, hole, NONE);
  store<u32>(m, mapCount(m) - 1, 12);
  return v;
}

/** Remove every entry and give large cell arrays back to the allocator. */
export function mapReset(m: usize): void {
  memFree(mapCells(m), <usize>mapCap(m) * 12);
  allocCells(m, MIN_BITS);
  store<u32>(m, 0, 12);
}

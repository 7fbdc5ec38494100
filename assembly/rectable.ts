// Open-addressing set of record indexes, keyed by fields stored in the records themselves.
//
//   header (16 bytes): +0 cells ptr, +4 shift, +8 count, +12 useA
//   cells: u64[cap]:  low 32 bits = record index (NONE = empty), high 32 bits = fingerprint
//
// Used for the tree's child links (key = parent node, local hash) and for the tiers' edges
// (key = parent engine hash or none, local hash). The fingerprint is the top 32 bits of the
// key's 64-bit hash, whose top `bits` bits are also the home cell. So a probe reads the record
// only when the fingerprint matches (about once per successful lookup, almost never on a miss),
// and growth and backward-shift deletion recompute homes from the cells alone, without reading
// any record. Before (4-byte cells, equality and homes read from the records) these cache misses
// made recGet and recDelete the top of the KV-event apply profile (bench/RESULTS.md). Cells cost
// 8 bytes, ~11 per record at the table's load.
// The record layout gives the key fields at fixed offsets:
//   record +0: local hash u64;  +8: key u64 (parent ext; edges only, useA = 1);  +16: key u32
//   (parent node for tree nodes; has-parent flag for edges) — see radix.ts / tiers.ts diagrams.
import { NONE } from './layout';
import { memAlloc, memFree } from './mem';
import { Pool, rec } from './pool';

@inline function cellsPtr(t: usize): usize { return load<usize>(t, 0); }
@inline function shiftOf(t: usize): u32 { return load<u32>(t, 4); }
@inline export function recCount(t: usize): u32 { return load<u32>(t, 8); }
@inline function capOf(t: usize): u32 { return <u32>1 << (64 - shiftOf(t)); }
@inline function useA(t: usize): bool { return load<u32>(t, 12) != 0; }

/** Fingerprint of a key: the top 32 bits of its Fibonacci hash of the mixed (local, a, b). */
@inline function fpOf(local: u64, a: u64, b: u32): u32 {
  const k = local ^ ((a + <u64>b + 1) * 0xC2B2AE3D27D4EB4F);
  return <u32>((k * 0x9E3779B97F4A7C15) >> 32);
}

/** Home cell of a fingerprint: its top `64 - shift` bits (tables never exceed 2^32 cells). */
@inline function homeOf(fp: u32, shift: u32): u32 { return fp >> (shift - 32); }

@inline function recMatches(rec: usize, local: u64, a: u64, b: u32, withA: bool): bool {
  return load<u64>(rec, 0) == local && load<u32>(rec, 16) == b && (!withA || load<u64>(rec, 8) == a);
}

@inline function recFp(p: Pool, v: u32, withA: bool): u32 {
  const r = rec(p, v);
  return fpOf(load<u64>(r, 0), withA ? load<u64>(r, 8) : 0, load<u32>(r, 16));
}

@inline function cell(v: u32, fp: u32): u64 { return (<u64>fp << 32) | <u64>v; }

function allocCells(t: usize, bits: u32): void {
  const n = <usize>1 << bits;
  const c = memAlloc(n << 3);
  memory.fill(c, 0xff, n << 3);
  store<usize>(t, c, 0);
  store<u32>(t, 64 - bits, 4);
}

/** A new empty table (cold). */
export function recNew(withA: bool): usize {
  const t = memAlloc(16);
  allocCells(t, 4);
  store<u32>(t, 0, 8);
  store<u32>(t, withA ? 1 : 0, 12);
  return t;
}

export function recFree(t: usize): void { memFree(cellsPtr(t), <usize>capOf(t) << 3); memFree(t, 16); }

/** Empty cell and key fingerprint of the last unsuccessful recGet (see recInsertAfterGet). */
let lastEmpty: u32 = 0;
let lastFp: u32 = 0;

/** Record index with key (local, a, b), or NONE. `base`/`size`: the record pool. */
export function recGet(t: usize, p: Pool, local: u64, a: u64, b: u32): u32 {
  const c = cellsPtr(t);
  const mask = capOf(t) - 1;
  const withA = useA(t);
  if (!withA) a = 0;
  const fp = fpOf(local, a, b);
  let i = homeOf(fp, shiftOf(t));
  while (true) {
    const w = load<u64>(c + (<usize>i << 3));
    const v = <u32>w;
    if (v == NONE) { lastEmpty = i; lastFp = fp; return NONE; }
    if (<u32>(w >> 32) == fp && recMatches(rec(p, v), local, a, b, withA)) return v;
    i = (i + 1) & mask;
  }
}

/** Puts a cell in the first empty slot from its home (the key must be absent). */
function place(t: usize, w: u64): void {
  const c = cellsPtr(t), mask = capOf(t) - 1;
  let i = homeOf(<u32>(w >> 32), shiftOf(t));
  while (<u32>load<u64>(c + (<usize>i << 3)) != NONE) i = (i + 1) & mask;
  store<u64>(c + (<usize>i << 3), w);
}

/** Doubles the cells, rehashing from the stored fingerprints (no record is read). */
function grow(t: usize): void {
  const old = cellsPtr(t), oldCap = capOf(t);
  allocCells(t, 64 - shiftOf(t) + 1);
  for (let i: u32 = 0; i < oldCap; i++) {
    const w = load<u64>(old + (<usize>i << 3));
    if (<u32>w != NONE) place(t, w);
  }
  memFree(old, <usize>oldCap << 3);
}

@inline function needsGrow(t: usize, count: u32): bool { return <u64>count * 4 > <u64>capOf(t) * 3; }

/** Insert record v (its key must be absent). */
export function recInsert(t: usize, p: Pool, v: u32): void {
  const count = recCount(t) + 1;
  if (needsGrow(t, count)) grow(t);
  place(t, cell(v, recFp(p, v, useA(t))));
  store<u32>(t, count, 8);
}

/**
 * Insert record v whose key the immediately preceding recGet on this table reported absent:
 * reuses that probe's empty cell and fingerprint (no second probe, no record read).
 */
export function recInsertAfterGet(t: usize, v: u32): void {
  const count = recCount(t) + 1;
  if (needsGrow(t, count)) {
    grow(t);
    place(t, cell(v, lastFp));
  } else {
    store<u64>(cellsPtr(t) + (<usize>lastEmpty << 3), cell(v, lastFp));
  }
  store<u32>(t, count, 8);
}

/** Remove record v (present). Backward-shift deletion; homes come from the fingerprints. */
export function recDelete(t: usize, p: Pool, v: u32): void {
  const c = cellsPtr(t), shift = shiftOf(t), mask = capOf(t) - 1;
  let i = homeOf(recFp(p, v, useA(t)), shift);
  while (true) {
    const w = <u32>load<u64>(c + (<usize>i << 3));
    if (w == v) break;
    if (w == NONE) return;
    i = (i + 1) & mask;
  }
  let hole = i;
  let j = (i + 1) & mask;
  while (true) {
    const w = load<u64>(c + (<usize>j << 3));
    if (<u32>w == NONE) break;
    const h = homeOf(<u32>(w >> 32), shift);
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      store<u64>(c + (<usize>hole << 3), w);
      hole = j;
    }
    j = (j + 1) & mask;
  }
  store<u64>(c + (<usize>hole << 3), 0xFFFFFFFFFFFFFFFF);
  store<u32>(t, recCount(t) - 1, 8);
}

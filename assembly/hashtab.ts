// Extendible hash table of fingerprinted cells: every table of the index (per-slot lookups,
// child links, tier edges) is one of these. The table stores values only; keys live in the
// records the values name, so a lookup compares the 32-bit fingerprint in the cell and the caller
// verifies a candidate against its record (continuing the probe on a mismatch).
//
//   table (16 B):   dir | dirMask | count | -
//   dir:            usize[dirMask + 1], bucket pointers. A bucket of local depth d is named by
//                   every entry whose low d bits equal its pattern (dirMask + 1 >> d entries).
//   bucket (16 B):  cells | bits u16 | depth u16 | count | pattern (the low `depth` bits of its fps)
//   cells:          u64[1 << bits]: low 32 bits = value (NONE = empty cell), high 32 bits = fp
//
// fp = the top 32 bits of the key's 64-bit hash. Its top `bits` bits give the home cell in the
// bucket (linear probing; deletion shifts later cells back, no tombstones); its low bits pick
// the directory entry. A bucket past 80% load doubles while it has fewer than 2^MAX_BITS cells,
// else splits in two by the next fp bit (doubling the directory first when the bucket's depth is
// the directory's). A growth step therefore rehashes at most 2^MAX_BITS cells (4 KiB) and no
// call copies a whole table: the doubling tables this replaced rehashed 2^17 cells in one
// 20-50 ms store while the index grew. Small buckets also keep memory in use: the cell arrays a
// bucket frees when it doubles are reused by other buckets (mem.ts size classes), and with
// 4 KiB buckets little is left over (index bench W=128: 65.1 bytes of memory per holding with
// 32 KiB buckets, 57.4 with 8 KiB, 53.6 with 4 KiB, for 54.3 live; same speed within noise).
import { NONE } from './layout';
import { memAlloc, memFree, memRealloc } from './mem';

const MIN_BITS: u32 = 3;
const MAX_BITS: u32 = 9;
const EMPTY: u64 = 0xFFFFFFFFFFFFFFFF;
/** A bucket grows when an insert would take it past LOAD_NUM / LOAD_DEN of its cells. */
const LOAD_NUM: u32 = 4, LOAD_DEN: u32 = 5;

@inline function full(b: usize): bool { return (bCount(b) + 1) * LOAD_DEN > (LOAD_NUM << bBits(b)); }

@inline function tDir(t: usize): usize { return load<usize>(t, 0); }
@inline function tMask(t: usize): u32 { return load<u32>(t, 4); }
@inline export function tabCount(t: usize): u32 { return load<u32>(t, 8); }

@inline export function bCells(b: usize): usize { return load<usize>(b, 0); }
@inline export function bBits(b: usize): u32 { return <u32>load<u16>(b, 4); }
@inline function bDepth(b: usize): u32 { return <u32>load<u16>(b, 6); }
@inline function bCount(b: usize): u32 { return load<u32>(b, 8); }
@inline function bPattern(b: usize): u32 { return load<u32>(b, 12); }
@inline function setCount(b: usize, n: u32): void { store<u32>(b, n, 8); }
@inline export function bMask(b: usize): u32 { return (<u32>1 << bBits(b)) - 1; }
@inline export function bHome(b: usize, fp: u32): u32 { return fp >> (32 - bBits(b)); }
@inline export function bCell(b: usize, i: u32): u64 { return load<u64>(bCells(b) + (<usize>i << 3)); }
@inline export function cellVal(w: u64): u32 { return <u32>w; }
@inline export function cellFp(w: u64): u32 { return <u32>(w >> 32); }

/** The bucket a fingerprint lives in. */
@inline export function tabBucket(t: usize, fp: u32): usize {
  return load<usize>(tDir(t) + (<usize>(fp & tMask(t)) << 2));
}

/** Byte address of the cell a fingerprint's probe starts at (for prefetching loads). */
@inline export function tabHomeAddr(t: usize, fp: u32): usize {
  const b = tabBucket(t, fp);
  return bCells(b) + (<usize>bHome(b, fp) << 3);
}

// --- probing: candidates (values whose fingerprint matches) in probe order; the caller verifies
// each against its record (without probing another table: the cursor is global) and stops at
// the first that fits:
//   for (let v = tabFirst(t, fp); v != NONE; v = tabNext()) if (fits(v)) return v;

let pBucket: usize = 0, pCells: usize = 0, pMask: u32 = 0, pAt: u32 = 0, pFp: u32 = 0;

/** The next candidate from the probe position, or NONE at the first empty cell. */
@inline export function tabNext(): u32 {
  while (true) {
    const w = load<u64>(pCells + (<usize>pAt << 3));
    pAt = (pAt + 1) & pMask;
    const v = <u32>w;
    if (v == NONE || <u32>(w >> 32) == pFp) return v;
  }
}

/** The first candidate for fp in t, or NONE. */
@inline export function tabFirst(t: usize, fp: u32): u32 {
  const b = tabBucket(t, fp);
  pBucket = b;
  pCells = bCells(b);
  pMask = bMask(b);
  pAt = bHome(b, fp);
  pFp = fp;
  return tabNext();
}

/**
 * Where the probe in hand stands: (bucket << 32) | cell of the candidate last returned, or of
 * the empty cell that ended it. Taken right after the probe (before any other probe, insert or
 * delete on any table), it lets tabInsertAt / tabDeleteAt skip probing again.
 */
@inline export function probeEnd(): u64 { return (<u64>pBucket << 32) | <u64>((pAt - 1) & pMask); }

function cellsNew(bits: u32): usize {
  const bytes = <usize>8 << bits;
  const c = memAlloc(bytes);
  memory.fill(c, 0xff, bytes);
  return c;
}

function bucketNew(bits: u32, depth: u32, pattern: u32): usize {
  const b = memAlloc(16);
  store<usize>(b, cellsNew(bits), 0);
  store<u16>(b, <u16>bits, 4);
  store<u16>(b, <u16>depth, 6);
  store<u32>(b, 0, 8);
  store<u32>(b, pattern, 12);
  return b;
}

function bucketFree(b: usize): void {
  memFree(bCells(b), <usize>8 << bBits(b));
  memFree(b, 16);
}

function init(t: usize): void {
  const dir = memAlloc(4);
  store<usize>(dir, bucketNew(MIN_BITS, 0, 0));
  store<usize>(t, dir, 0);
  store<u32>(t, 0, 4);
  store<u32>(t, 0, 8);
}

/** Free every bucket and the directory. */
function release(t: usize): void {
  const n = tMask(t) + 1, dir = tDir(t);
  for (let i: u32 = 0; i < n; i++) {
    const b = load<usize>(dir + (<usize>i << 2));
    if (i == bPattern(b)) bucketFree(b); // the entry equal to its pattern names it once
  }
  memFree(dir, <usize>n << 2);
}

/** A new empty table (cold). */
export function tabNew(): usize {
  const t = memAlloc(16);
  init(t);
  return t;
}

/** Free a table and its buckets. */
export function tabFree(t: usize): void {
  release(t);
  memFree(t, 16);
}

/** Remove every entry and give the buckets back (cold). */
export function tabReset(t: usize): void {
  release(t);
  init(t);
}

/** Every value into out (u32 each); returns how many (= tabCount). */
export function tabValues(t: usize, out: usize): u32 {
  let k: u32 = 0;
  const n = tMask(t) + 1, dir = tDir(t);
  for (let d: u32 = 0; d < n; d++) {
    const b = load<usize>(dir + (<usize>d << 2));
    if (d != bPattern(b)) continue;
    const c = bCells(b), cap = <u32>1 << bBits(b);
    for (let i: u32 = 0; i < cap; i++) {
      const v = <u32>load<u64>(c + (<usize>i << 3));
      if (v != NONE) store<u32>(out + (<usize>(k++) << 2), v);
    }
  }
  return k;
}

/** Put a cell into the first empty cell from its home (the bucket has room). */
@inline function place(c: usize, bits: u32, w: u64): void {
  const mask = (<u32>1 << bits) - 1;
  let i = cellFp(w) >> (32 - bits);
  while (<u32>load<u64>(c + (<usize>i << 3)) != NONE) i = (i + 1) & mask;
  store<u64>(c + (<usize>i << 3), w);
}

/** Rehash bucket b into `bits`-cell arrays: one, or two by fp bit `depth` when splitting. */
function grow(t: usize, b: usize): void {
  const bits = bBits(b), old = bCells(b), cap = <u32>1 << bits;
  if (bits < MAX_BITS) {
    const c = cellsNew(bits + 1);
    for (let i: u32 = 0; i < cap; i++) {
      const w = load<u64>(old + (<usize>i << 3));
      if (<u32>w != NONE) place(c, bits + 1, w);
    }
    memFree(old, <usize>8 << bits);
    store<usize>(b, c, 0);
    store<u16>(b, <u16>(bits + 1), 4);
    return;
  }
  // Split: b keeps the fps whose bit `d` is 0, a new bucket takes the others.
  const d = bDepth(b);
  let mask = tMask(t);
  if ((<u32>1 << d) > mask) { // the directory names b once: double it
    const n = mask + 1;
    const dir = memRealloc(tDir(t), <usize>n << 2, <usize>n << 3);
    memory.copy(dir + (<usize>n << 2), dir, <usize>n << 2);
    mask = (mask << 1) | 1;
    store<usize>(t, dir, 0);
    store<u32>(t, mask, 4);
  }
  const pattern = bPattern(b);
  const c0 = cellsNew(bits), b1 = bucketNew(bits, d + 1, pattern | (<u32>1 << d)), c1 = bCells(b1);
  let n1: u32 = 0;
  for (let i: u32 = 0; i < cap; i++) {
    const w = load<u64>(old + (<usize>i << 3));
    if (<u32>w == NONE) continue;
    if ((cellFp(w) >> d) & 1) { place(c1, bits, w); n1++; } else place(c0, bits, w);
  }
  memFree(old, <usize>8 << bits);
  store<usize>(b, c0, 0);
  store<u16>(b, <u16>(d + 1), 6);
  setCount(b, bCount(b) - n1);
  setCount(b1, n1);
  // Directory entries naming b: pattern | k << d; those with bit d set now name b1.
  const dir = tDir(t);
  for (let k: u32 = 1; (k << d) <= mask; k += 2) store<usize>(dir + (<usize>(pattern | (k << d)) << 2), b1);
}

/** Insert (fp, val); the caller knows val is not in the table. May grow one bucket. */
export function tabInsert(t: usize, fp: u32, val: u32): void {
  let b = tabBucket(t, fp);
  if (full(b)) {
    grow(t, b);
    b = tabBucket(t, fp);
  }
  place(bCells(b), bBits(b), (<u64>fp << 32) | <u64>val);
  setCount(b, bCount(b) + 1);
  store<u32>(t, tabCount(t) + 1, 8);
}

/**
 * Insert (fp, val) into the empty cell where a probe for fp ended without finding it (`end` =
 * probeEnd() then, with no change to t since): no second probe unless the bucket must grow.
 */
export function tabInsertAt(t: usize, end: u64, fp: u32, val: u32): void {
  const b = <usize>(end >> 32);
  if (full(b)) { tabInsert(t, fp, val); return; }
  store<u64>(bCells(b) + (<usize>(<u32>end) << 3), (<u64>fp << 32) | <u64>val);
  setCount(b, bCount(b) + 1);
  store<u32>(t, tabCount(t) + 1, 8);
}

/** Delete the cell holding val (probed from fp's home); false when it is not there. */
export function tabDelete(t: usize, fp: u32, val: u32): bool {
  const b = tabBucket(t, fp), c = bCells(b), mask = bMask(b);
  let i = bHome(b, fp);
  while (true) {
    const v = <u32>load<u64>(c + (<usize>i << 3));
    if (v == val) break;
    if (v == NONE) return false;
    i = (i + 1) & mask;
  }
  deleteCell(t, b, i);
  return true;
}

/** Delete the candidate a probe just returned (`end` = probeEnd() then, t unchanged since). */
export function tabDeleteAt(t: usize, end: u64): void { deleteCell(t, <usize>(end >> 32), <u32>end); }

/** Empty cell i of bucket b, shifting later cells of its run back (no tombstones). */
function deleteCell(t: usize, b: usize, i: u32): void {
  const c = bCells(b), bits = bBits(b), mask = (<u32>1 << bits) - 1;
  let hole = i;
  let j = (i + 1) & mask;
  while (true) {
    const w = load<u64>(c + (<usize>j << 3));
    if (<u32>w == NONE) break;
    const h = cellFp(w) >> (32 - bits);
    // Move j into the hole when its home is not in the cyclic range (hole, j].
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      store<u64>(c + (<usize>hole << 3), w);
      hole = j;
    }
    j = (j + 1) & mask;
  }
  store<u64>(c + (<usize>hole << 3), EMPTY);
  setCount(b, bCount(b) - 1);
  store<u32>(t, tabCount(t) - 1, 8);
}

/** Bytes held by a table (buckets, cells and directory), for memory accounting in tests. */
export function tabBytes(t: usize): usize {
  let bytes: usize = 16 + (<usize>(tMask(t) + 1) << 2);
  const n = tMask(t) + 1, dir = tDir(t);
  for (let d: u32 = 0; d < n; d++) {
    const b = load<usize>(dir + (<usize>d << 2));
    if (d == bPattern(b)) bytes += 16 + (<usize>8 << bBits(b));
  }
  return bytes;
}

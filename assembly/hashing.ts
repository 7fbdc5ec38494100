// The router's block and sequence hashing (Dynamo `lib/kv-router/src/protocols.rs`), over the scratch regions.
//
//   R_TOKENS    u32 x n      --hashBlocks-->  R_HASH_A  u64 x blocks   (local block hashes)
//   R_MM_COUNTS u32 x blocks                  (per block: how many mm hashes; 0 = none)
//   R_MM_HASHES u64 x sum(counts)             (all blocks' mm hashes, in block order)
//   R_HASH_A    u64 x n      --chainHashes--> R_HASH_B  u64 x n        (sequence hashes)
//   R_BYTES     u8           --xxh3Bytes / saltSeed--> P_RESULT (and P_SEED for saltSeed)
//
// Block i covers tokens [i*bs, i*bs + w) with w = bs, or bs + 1 for EAGLE windows. Tokens are
// u32 little-endian in memory, so a block without mm info is hashed in place. A block with mm
// info is hashed over LE_u32(window) ++ LE_u64(sorted mm hashes), assembled in R_TMP; R_TMP is
// grown here (cold, once per larger need) if too small, so steady-state calls allocate nothing.
import { R_HASH_A, R_HASH_B, R_TOKENS, R_MM_COUNTS, R_MM_HASHES, R_BYTES, R_TMP,
  P_SEED, P_CHAIN_SEED, P_RESULT } from './layout';
import { regionPtr, regionCap, reserve, paramU64, setParamU64, scratchInit } from './scratch';
import { xxh3, xxh3Seeded17to128, seededSecret, xxh3_16k, xxh3_16flip1, xxh3_16flip2 } from './xxh3';

/** hashBlocks status: an input or output region is smaller than the call needs. */
export const HB_REGION_TOO_SMALL: i32 = -1;

/** Number of complete blocks: floor(n / bs), EAGLE floor((n - 1) / bs); 0 if bs <= 0 or n < 1. */
export function blockCount(nTokens: i32, blockSize: i32, eagle: bool): i32 {
  if (blockSize <= 0 || nTokens <= 0) return 0;
  return eagle ? (nTokens - 1) / blockSize : nTokens / blockSize;
}

/** Sort n u64 at p ascending: insertion sort (blocks carry 1-2 mm hashes), heapsort past 16. */
function sortU64(p: usize, n: usize): void {
  if (n <= 16) {
    for (let i: usize = 1; i < n; i++) {
      const v = load<u64>(p + (i << 3));
      let j = i;
      while (j > 0 && load<u64>(p + ((j - 1) << 3)) > v) { store<u64>(p + (j << 3), load<u64>(p + ((j - 1) << 3))); j--; }
      store<u64>(p + (j << 3), v);
    }
    return;
  }
  // Heapsort keeps adversarial event payloads (thousands of mm hashes in a block) O(n log n).
  for (let i = n >> 1; i > 0; i--) siftDown(p, i - 1, n);
  for (let end = n - 1; end > 0; end--) {
    const t = load<u64>(p); store<u64>(p, load<u64>(p + (end << 3))); store<u64>(p + (end << 3), t);
    siftDown(p, 0, end);
  }
}

function siftDown(p: usize, root: usize, n: usize): void {
  const v = load<u64>(p + (root << 3));
  let i = root;
  while (true) {
    let c = (i << 1) + 1;
    if (c >= n) break;
    if (c + 1 < n && load<u64>(p + ((c + 1) << 3)) > load<u64>(p + (c << 3))) c++;
    const cv = load<u64>(p + (c << 3));
    if (cv <= v) break;
    store<u64>(p + (i << 3), cv);
    i = c;
  }
  store<u64>(p + (i << 3), v);
}

/**
 * Hash the complete blocks of `nTokens` u32 tokens at `tokens` into u64s at `dst`; returns the
 * block count. `mmCounts == 0` means no mm info; otherwise mmCounts[i] (u32) mm hashes of block
 * i are read consecutively from `mmHashes` (u64). Callers guarantee the regions are big enough;
 * neither `dst`, `tokens` nor the mm arrays may lie in R_TMP (it is the mm work area).
 */
export function hashBlocksInto(dst: usize, tokens: usize, nTokens: i32, blockSize: i32, eagle: bool,
  mmCounts: usize, mmHashes: usize, seed: u64): i32 {
  const count = blockCount(nTokens, blockSize, eagle);
  const stride = <usize>blockSize << 2;
  const win = stride + (eagle ? 4 : 0);
  if (mmCounts == 0) {
    if (win > 16 && win <= 128) { // bs 5..32: skip xxh3's length dispatch (-18%, see xxh3.ts)
      const cs = seededSecret(seed);
      for (let i = 0; i < count; i++) store<u64>(dst + (<usize>i << 3), xxh3Seeded17to128(tokens + <usize>i * stride, win, cs));
    } else {
      for (let i = 0; i < count; i++) store<u64>(dst + (<usize>i << 3), xxh3(tokens + <usize>i * stride, win, seed));
    }
    return count;
  }
  let mm = mmHashes;
  for (let i = 0; i < count; i++) {
    const src = tokens + <usize>i * stride;
    const k = <usize>load<u32>(mmCounts + (<usize>i << 2));
    let h: u64;
    if (k == 0) h = xxh3(src, win, seed);
    else {
      const len = win + (k << 3);
      const tmp = regionCap(R_TMP) >= len ? regionPtr(R_TMP) : reserve(R_TMP, len);
      memory.copy(tmp, src, win);
      memory.copy(tmp + win, mm, k << 3);
      sortU64(tmp + win, k);
      h = xxh3(tmp, len, seed);
      mm += k << 3;
    }
    store<u64>(dst + (<usize>i << 3), h);
  }
  return count;
}

/**
 * Sequence hashes of n local hashes: dst[0] = src[0], dst[i] = xxh3(LE(dst[i-1]) ++ LE(src[i]),
 * seed). dst may equal src. The seed's two bit flips are computed once per call, not per block.
 */
export function chainInto(dst: usize, src: usize, n: i32, seed: u64): void {
  if (n <= 0) return;
  const f1 = xxh3_16flip1(seed), f2 = xxh3_16flip2(seed);
  let prev = load<u64>(src);
  store<u64>(dst, prev);
  for (let i = 1; i < n; i++) {
    prev = xxh3_16k(prev, load<u64>(src + (<usize>i << 3)), f1, f2);
    store<u64>(dst + (<usize>i << 3), prev);
  }
}

/** P_RESULT = xxh3(R_BYTES[0..len), P_SEED). */
export function xxh3Bytes(len: i32): void {
  scratchInit();
  assert(len >= 0 && <u64>len <= <u64>regionCap(R_BYTES), 'xxh3Bytes: len exceeds R_BYTES');
  setParamU64(P_RESULT, xxh3(regionPtr(R_BYTES), <usize>len, paramU64(P_SEED)));
}

/**
 * Public block seed (protocols.rs) from R_BYTES = utf8(lora) ++ utf8(namespace):
 * 1337 + xxh3(lora, 0) (if loraLen > 0) + xxh3(ns, 1) (if nsLen > 0), wrapping. -> P_SEED, P_RESULT.
 */
export function saltSeed(loraLen: i32, nsLen: i32): void {
  scratchInit();
  assert(loraLen >= 0 && nsLen >= 0 && <u64>loraLen + <u64>nsLen <= <u64>regionCap(R_BYTES),
    'saltSeed: lengths exceed R_BYTES');
  const p = regionPtr(R_BYTES);
  let s: u64 = 1337;
  if (loraLen > 0) s += xxh3(p, <usize>loraLen, 0);
  if (nsLen > 0) s += xxh3(p + <usize>loraLen, <usize>nsLen, 1);
  setParamU64(P_SEED, s);
  setParamU64(P_RESULT, s);
}

/**
 * Local block hashes of R_TOKENS[0..nTokens) with seed P_SEED into R_HASH_A; returns the block
 * count, or HB_REGION_TOO_SMALL (-1) if a region holds less than the call reads or writes
 * (TS reserves R_TOKENS, R_HASH_A and, with withMm, R_MM_COUNTS / R_MM_HASHES first).
 */
export function hashBlocks(nTokens: i32, blockSize: i32, eagle: i32, withMm: i32): i32 {
  scratchInit();
  const count = blockCount(nTokens, blockSize, eagle != 0);
  if (count == 0) return 0;
  // u64 arithmetic: nTokens << 2 can exceed 2^32 for a hostile nTokens.
  if ((<u64>nTokens << 2) > <u64>regionCap(R_TOKENS) || (<u64>count << 3) > <u64>regionCap(R_HASH_A)) return HB_REGION_TOO_SMALL;
  let counts: usize = 0, hashes: usize = 0;
  if (withMm != 0) {
    if ((<u64>count << 2) > <u64>regionCap(R_MM_COUNTS)) return HB_REGION_TOO_SMALL;
    counts = regionPtr(R_MM_COUNTS);
    let total: u64 = 0;
    for (let i = 0; i < count; i++) total += <u64>load<u32>(counts + (<usize>i << 2));
    if ((total << 3) > <u64>regionCap(R_MM_HASHES)) return HB_REGION_TOO_SMALL;
    hashes = regionPtr(R_MM_HASHES);
  }
  return hashBlocksInto(regionPtr(R_HASH_A), regionPtr(R_TOKENS), nTokens, blockSize, eagle != 0,
    counts, hashes, paramU64(P_SEED));
}

/** Sequence hashes (protocols.rs) of R_HASH_A[0..n) with seed P_CHAIN_SEED into R_HASH_B[0..n). */
export function chainHashes(n: i32): void {
  scratchInit();
  if (n <= 0) return;
  assert((<u64>n << 3) <= <u64>regionCap(R_HASH_A) && (<u64>n << 3) <= <u64>regionCap(R_HASH_B),
    'chainHashes: n exceeds R_HASH_A / R_HASH_B');
  chainInto(regionPtr(R_HASH_B), regionPtr(R_HASH_A), n, paramU64(P_CHAIN_SEED));
}

// XXH3-64 with a 64-bit seed (xxHash 0.8 `XXH3_64bits_withSeed`), over linear memory.
//
// A straight port of the scalar reference (xxhash.h): one function per length class, the
// 192-byte default secret K, and for len > 240 with seed != 0 the derived secret
// (`XXH3_initCustomSecret`) kept in a static buffer and re-derived only when the seed changes.
// Nothing here allocates. Wasm is little-endian, so `load<u64>` is XXH_readLE64.
//
//   len        path             reads
//   0          avalanche(seed)  K[56..72)
//   1..3       len1to3          bytes 0, len/2, len-1
//   4..8       len4to8          first/last 4 bytes
//   9..16      len9to16         first/last 8 bytes
//   17..128    len17to128       16-byte pairs from both ends (mix16B)
//   129..240   len129to240      8 + (len/16 - 8) pairs, then the last 16 bytes
//   > 240      hashLong         64-byte stripes x 16 per 1,024-byte block, scramble per block
//
// AssemblyScript has no u128: mul128fold64 builds the 128-bit product from 32-bit halves.

// @ts-ignore: decorator
@inline const PRIME32_1: u64 = 0x9E3779B1;
// @ts-ignore: decorator
@inline const PRIME32_2: u64 = 0x85EBCA77;
// @ts-ignore: decorator
@inline const PRIME32_3: u64 = 0xC2B2AE3D;
// @ts-ignore: decorator
@inline const PRIME64_1: u64 = 0x9E3779B185EBCA87;
// @ts-ignore: decorator
@inline const PRIME64_2: u64 = 0xC2B2AE3D27D4EB4F;
// @ts-ignore: decorator
@inline const PRIME64_3: u64 = 0x165667B19E3779F9;
// @ts-ignore: decorator
@inline const PRIME64_4: u64 = 0x85EBCA77C2B2AE63;
// @ts-ignore: decorator
@inline const PRIME64_5: u64 = 0x27D4EB2F165667C5;
// @ts-ignore: decorator
@inline const PRIME_MX1: u64 = 0x165667919E3779F9;
// @ts-ignore: decorator
@inline const PRIME_MX2: u64 = 0x9FB21C651E98DF25;
// @ts-ignore: decorator
@inline const SECRET_SIZE: usize = 192;

/** XXH3_kSecret: the default 192-byte secret. */
const K: usize = memory.data<u8>([
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
  0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
  0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
  0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
  0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
  0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
  0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
  0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
  0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
  0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
  0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
  0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
], 16);

/** Secret derived from `customSeed` (valid once `customReady`). */
const CUSTOM: usize = memory.data(<i32>SECRET_SIZE, 16);
let customSeed: u64 = 0;
let customReady = false;

/** Low 64 bits xor high 64 bits of the 128-bit product a * b (XXH3_mul128_fold64). */
// @ts-ignore: decorator
@inline export function mul128fold64(a: u64, b: u64): u64 {
  const al = a & 0xFFFFFFFF, ah = a >> 32;
  const bl = b & 0xFFFFFFFF, bh = b >> 32;
  const ll = al * bl, hl = ah * bl, lh = al * bh, hh = ah * bh;
  // cross <= 2 * (2^32 - 1) + (2^32 - 1)^2 = 2^64 - 1: the middle sum cannot overflow.
  const cross = (ll >> 32) + (hl & 0xFFFFFFFF) + lh;
  const hi = (hl >> 32) + (cross >> 32) + hh;
  const lo = (cross << 32) | (ll & 0xFFFFFFFF);
  return lo ^ hi;
}

// @ts-ignore: decorator
@inline function avalanche64(h: u64): u64 { // XXH64_avalanche
  h ^= h >> 33; h *= PRIME64_2;
  h ^= h >> 29; h *= PRIME64_3;
  return h ^ (h >> 32);
}

// @ts-ignore: decorator
@inline function avalanche(h: u64): u64 { // XXH3_avalanche
  h ^= h >> 37; h *= PRIME_MX1;
  return h ^ (h >> 32);
}

// @ts-ignore: decorator
@inline function rrmxmx(h: u64, len: u64): u64 {
  h ^= rotl<u64>(h, 49) ^ rotl<u64>(h, 24);
  h *= PRIME_MX2;
  h ^= (h >> 35) + len;
  h *= PRIME_MX2;
  return h ^ (h >> 28);
}

// @ts-ignore: decorator
@inline function mix16B(p: usize, s: usize, seed: u64): u64 {
  return mul128fold64(load<u64>(p) ^ (load<u64>(s) + seed), load<u64>(p, 8) ^ (load<u64>(s, 8) - seed));
}

function len0to16(p: usize, len: usize, seed: u64): u64 {
  if (len > 8) {
    const lo = load<u64>(p) ^ ((load<u64>(K, 24) ^ load<u64>(K, 32)) + seed);
    const hi = load<u64>(p + len - 8) ^ ((load<u64>(K, 40) ^ load<u64>(K, 48)) - seed);
    return avalanche(<u64>len + bswap<u64>(lo) + hi + mul128fold64(lo, hi));
  }
  if (len >= 4) {
    const s = seed ^ (<u64>bswap<u32>(<u32>seed) << 32);
    const in64 = <u64>load<u32>(p + len - 4) + (<u64>load<u32>(p) << 32);
    return rrmxmx(in64 ^ ((load<u64>(K, 8) ^ load<u64>(K, 16)) - s), <u64>len);
  }
  if (len > 0) {
    const c1 = <u32>load<u8>(p), c2 = <u32>load<u8>(p + (len >> 1)), c3 = <u32>load<u8>(p + len - 1);
    const combined = (c1 << 16) | (c2 << 24) | c3 | (<u32>len << 8);
    return avalanche64(<u64>combined ^ (<u64>(load<u32>(K) ^ load<u32>(K, 4)) + seed));
  }
  return avalanche64(seed ^ (load<u64>(K, 56) ^ load<u64>(K, 64)));
}

function len17to128(p: usize, len: usize, seed: u64): u64 {
  let acc: u64 = <u64>len * PRIME64_1;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        acc += mix16B(p + 48, K + 96, seed);
        acc += mix16B(p + len - 64, K + 112, seed);
      }
      acc += mix16B(p + 32, K + 64, seed);
      acc += mix16B(p + len - 48, K + 80, seed);
    }
    acc += mix16B(p + 16, K + 32, seed);
    acc += mix16B(p + len - 32, K + 48, seed);
  }
  acc += mix16B(p, K, seed);
  acc += mix16B(p + len - 16, K + 16, seed);
  return avalanche(acc);
}

function len129to240(p: usize, len: usize, seed: u64): u64 {
  let acc: u64 = <u64>len * PRIME64_1;
  for (let i: usize = 0; i < 128; i += 16) acc += mix16B(p + i, K + i, seed);
  acc = avalanche(acc);
  const end = (len >> 4) << 4;
  // MIDSIZE_STARTOFFSET = 3; the last 16 bytes use K + SECRET_SIZE_MIN(136) - LASTOFFSET(17).
  for (let i: usize = 128; i < end; i += 16) acc += mix16B(p + i, K + (i - 128) + 3, seed);
  acc += mix16B(p + len - 16, K + 119, seed);
  return avalanche(acc);
}

/**
 * The seeded secret: K itself for seed 0, else K with +seed/-seed on alternate words
 * (XXH3_initCustomSecret). Used by hashLong and by xxh3Seeded17to128; cached for one seed.
 */
export function seededSecret(seed: u64): usize {
  if (seed == 0) return K;
  if (!customReady || customSeed != seed) {
    for (let i: usize = 0; i < SECRET_SIZE; i += 16) {
      store<u64>(CUSTOM + i, load<u64>(K + i) + seed);
      store<u64>(CUSTOM + i, load<u64>(K + i, 8) - seed, 8);
    }
    customSeed = seed;
    customReady = true;
  }
  return CUSTOM;
}

// @ts-ignore: decorator
@inline function mulHalves(k: u64): u64 { return (k & 0xFFFFFFFF) * (k >> 32); }

// @ts-ignore: decorator
@inline function scramble(a: u64, key: u64): u64 { return ((a ^ (a >> 47)) ^ key) * PRIME32_1; }

/**
 * len > 240. The eight accumulators live in locals, not a memory array: V8 keeps them in
 * registers, whereas acc[i] in memory costs a load and a store per lane per stripe.
 * The reference's three loops (full blocks, the partial block, the last stripe) are one loop
 * over floor((len-1)/64) stripes plus the final one, so the stripe body exists once:
 * stripe k uses secret + 8 * (k % 16) and a scramble follows every 16th stripe, which is
 * exactly "scramble after each full 1,024-byte block" because (len-1)/64 and (len-1)/1024
 * count the same full blocks.
 */
function hashLong(p: usize, len: usize, s: usize): u64 {
  let a0: u64 = PRIME32_3, a1: u64 = PRIME64_1, a2: u64 = PRIME64_2, a3: u64 = PRIME64_3;
  let a4: u64 = PRIME64_4, a5: u64 = PRIME32_2, a6: u64 = PRIME64_5, a7: u64 = PRIME32_1;
  const stripes = (len - 1) >> 6;
  for (let k: usize = 0; k <= stripes; k++) {
    const last = k == stripes;
    const x = last ? p + len - 64 : p + (k << 6);
    const y = last ? s + SECRET_SIZE - 64 - 7 : s + ((k & 15) << 3); // LASTACC_START = 7
    const d0 = load<u64>(x, 0), d1 = load<u64>(x, 8), d2 = load<u64>(x, 16), d3 = load<u64>(x, 24);
    const d4 = load<u64>(x, 32), d5 = load<u64>(x, 40), d6 = load<u64>(x, 48), d7 = load<u64>(x, 56);
    a0 += d1 + mulHalves(d0 ^ load<u64>(y, 0));
    a1 += d0 + mulHalves(d1 ^ load<u64>(y, 8));
    a2 += d3 + mulHalves(d2 ^ load<u64>(y, 16));
    a3 += d2 + mulHalves(d3 ^ load<u64>(y, 24));
    a4 += d5 + mulHalves(d4 ^ load<u64>(y, 32));
    a5 += d4 + mulHalves(d5 ^ load<u64>(y, 40));
    a6 += d7 + mulHalves(d6 ^ load<u64>(y, 48));
    a7 += d6 + mulHalves(d7 ^ load<u64>(y, 56));
    if ((k & 15) == 15 && !last) {
      const z = s + SECRET_SIZE - 64;
      a0 = scramble(a0, load<u64>(z, 0)); a1 = scramble(a1, load<u64>(z, 8));
      a2 = scramble(a2, load<u64>(z, 16)); a3 = scramble(a3, load<u64>(z, 24));
      a4 = scramble(a4, load<u64>(z, 32)); a5 = scramble(a5, load<u64>(z, 40));
      a6 = scramble(a6, load<u64>(z, 48)); a7 = scramble(a7, load<u64>(z, 56));
    }
  }
  const m = s + 11; // MERGEACCS_START
  let r: u64 = <u64>len * PRIME64_1;
  r += mul128fold64(a0 ^ load<u64>(m, 0), a1 ^ load<u64>(m, 8));
  r += mul128fold64(a2 ^ load<u64>(m, 16), a3 ^ load<u64>(m, 24));
  r += mul128fold64(a4 ^ load<u64>(m, 32), a5 ^ load<u64>(m, 40));
  r += mul128fold64(a6 ^ load<u64>(m, 48), a7 ^ load<u64>(m, 56));
  return avalanche(r);
}

/** XXH3-64 of memory [ptr, ptr + len) with a 64-bit seed. */
export function xxh3(ptr: usize, len: usize, seed: u64): u64 {
  if (len <= 16) return len0to16(ptr, len, seed);
  if (len <= 128) return len17to128(ptr, len, seed);
  if (len <= 240) return len129to240(ptr, len, seed);
  return hashLong(ptr, len, seededSecret(seed));
}

/**
 * len17to128 for 17 <= len <= 128 with `cs = seededSecret(seed)`, same result. Every mix16B of
 * this class reads K at a 16-aligned offset, where K + seed / K - seed are exactly the seeded
 * secret's words, so the per-mix adds disappear. Block hashing (bs 5..32 tokens) derives cs
 * once per call and calls this directly. Measured A/B (three builds in one process, best of
 * 30 x 50 hashBlocks calls, 32,768 tokens, bs 16, Node 20, 2-vCPU Xeon): xxh3() per block
 * 37.7 us; len17to128 called directly (no length dispatch) 33.3 us; this 30.9 us (-18%).
 */
export function xxh3Seeded17to128(p: usize, len: usize, cs: usize): u64 {
  let acc: u64 = <u64>len * PRIME64_1;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        acc += mul128fold64(load<u64>(p, 48) ^ load<u64>(cs, 96), load<u64>(p, 56) ^ load<u64>(cs, 104));
        acc += mul128fold64(load<u64>(p + len - 64) ^ load<u64>(cs, 112), load<u64>(p + len - 56) ^ load<u64>(cs, 120));
      }
      acc += mul128fold64(load<u64>(p, 32) ^ load<u64>(cs, 64), load<u64>(p, 40) ^ load<u64>(cs, 72));
      acc += mul128fold64(load<u64>(p + len - 48) ^ load<u64>(cs, 80), load<u64>(p + len - 40) ^ load<u64>(cs, 88));
    }
    acc += mul128fold64(load<u64>(p, 16) ^ load<u64>(cs, 32), load<u64>(p, 24) ^ load<u64>(cs, 40));
    acc += mul128fold64(load<u64>(p + len - 32) ^ load<u64>(cs, 48), load<u64>(p + len - 24) ^ load<u64>(cs, 56));
  }
  acc += mul128fold64(load<u64>(p) ^ load<u64>(cs), load<u64>(p, 8) ^ load<u64>(cs, 8));
  acc += mul128fold64(load<u64>(p + len - 16) ^ load<u64>(cs, 16), load<u64>(p + len - 8) ^ load<u64>(cs, 24));
  return avalanche(acc);
}

/** The two seed-dependent constants of the 16-byte path: (K[24..32) ^ K[32..40)) + seed. */
// @ts-ignore: decorator
@inline export function xxh3_16flip1(seed: u64): u64 { return (load<u64>(K, 24) ^ load<u64>(K, 32)) + seed; }
/** (K[40..48) ^ K[48..56)) - seed. */
// @ts-ignore: decorator
@inline export function xxh3_16flip2(seed: u64): u64 { return (load<u64>(K, 40) ^ load<u64>(K, 48)) - seed; }

/**
 * XXH3-64 of the 16 bytes LE(a) ++ LE(b) with bit flips from xxh3_16flip1/2(seed): the
 * len9to16 path with len = 16, from registers (no memory round trip, flips hoisted by callers).
 */
// @ts-ignore: decorator
@inline export function xxh3_16k(a: u64, b: u64, flip1: u64, flip2: u64): u64 {
  const lo = a ^ flip1, hi = b ^ flip2;
  return avalanche(16 + bswap<u64>(lo) + hi + mul128fold64(lo, hi));
}

/** XXH3-64 of the 16-byte buffer LE(a) ++ LE(b) with `seed` (sequence-hash chaining). */
// @ts-ignore: decorator
@inline export function xxh3_16(a: u64, b: u64, seed: u64): u64 {
  return xxh3_16k(a, b, xxh3_16flip1(seed), xxh3_16flip2(seed));
}

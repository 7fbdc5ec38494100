// Record-keyed tables: the tree's child links (key = parent node, local hash) and the tiers'
// edges (key = parent engine hash or none, local hash), as hashtab.ts tables whose cells carry
// the key's fingerprint. A probe reads a record only when the fingerprint matches (about once per
// successful lookup, almost never on a miss); growth and deletion work from the cells alone.
// The record layout gives the key fields at fixed offsets:
//   record +0: local hash u64;  +8: key u64 (parent ext; edges only, withA);  +16: key u32
//   (parent node for tree nodes; has-parent flag for edges) — see radix.ts / tiers.ts diagrams.
import { NONE } from './layout';
import { Pool, rec } from './pool';
import { tabFirst, tabNext, tabInsert, tabDelete } from './hashtab';

/** The 64-bit finaliser of MurmurHash3 (a bijection): spreads every input bit over the output. */
@inline export function mix64(x: u64): u64 {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCD;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53;
  return x ^ (x >> 33);
}

/** Fingerprint of a record key (local, a, b): the top 32 bits of its mixed hash. */
@inline function fpOf(local: u64, a: u64, b: u32): u32 {
  return <u32>(mix64(local ^ ((a + <u64>b + 1) * 0x9E3779B97F4A7C15)) >> 32);
}

@inline function recMatches(r: usize, local: u64, a: u64, b: u32, withA: bool): bool {
  return load<u64>(r, 0) == local && load<u32>(r, 16) == b && (!withA || load<u64>(r, 8) == a);
}

@inline function recFp(p: Pool, v: u32, withA: bool): u32 {
  const r = rec(p, v);
  return fpOf(load<u64>(r, 0), withA ? load<u64>(r, 8) : 0, load<u32>(r, 16));
}

/** Record index with key (local, a, b) in table t of pool p (`withA`: edges), or NONE. */
export function recGet(t: usize, p: Pool, withA: bool, local: u64, a: u64, b: u32): u32 {
  if (!withA) a = 0;
  const fp = fpOf(local, a, b);
  for (let v = tabFirst(t, fp); v != NONE; v = tabNext()) if (recMatches(rec(p, v), local, a, b, withA)) return v;
  return NONE;
}

/** Insert record v (its key must be absent). */
export function recInsert(t: usize, p: Pool, withA: bool, v: u32): void { tabInsert(t, recFp(p, v, withA), v); }

/** Remove record v (present). */
export function recDelete(t: usize, p: Pool, withA: bool, v: u32): void { tabDelete(t, recFp(p, v, withA), v); }

/**
 * Typed API over the wasm hashing exports (assembly/hashing.ts; algorithms §1.2-§1.5).
 *
 * Hot callers use `hashBlocksToScratch` / `chainToScratch` and read the results in place from
 * `R_HASH_A` / `R_HASH_B` (no BigInt per hash). The `bigint[]` functions are cold conveniences.
 */
import { getWasm, type Wasm } from './wasm.js';

/** XXH3 seed of public-mode local block hashes and of the sequence-hash chain (1337). */
export const PUBLIC_SEED = 1337n;

/** Per-block multimodal hashes: entry i belongs to block i; null or [] = no mm info. */
export type BlockMm = readonly (readonly bigint[] | null)[] | null;

/** Options of the block-hashing functions. */
export interface BlockHashOptions {
  /** EAGLE windows: bs + 1 tokens per block, stride bs (§1.5). */
  eagle?: boolean;
  /** Multimodal hashes per block (§1.4); appended sorted ascending after the block's tokens. */
  mm?: BlockMm;
}

const enc = new TextEncoder();
const EMPTY = new Uint8Array(0);

/** Complete blocks of n tokens: floor(n / bs), EAGLE floor((n - 1) / bs); 0 if bs <= 0 or n < 1. */
export function blockCount(nTokens: number, blockSize: number, eagle = false): number {
  if (!(blockSize > 0) || nTokens < 1) return 0;
  return Math.floor((eagle ? nTokens - 1 : nTokens) / blockSize);
}

/**
 * XXH3-64 of `bytes` with a 64-bit seed (cold: copies through R_BYTES).
 * P_SEED is restored afterwards, so a block seed set for a later call survives.
 */
export function xxh3(bytes: Uint8Array, seed: bigint): bigint {
  const w = getWasm(), L = w.layout;
  w.reserve(L.R_BYTES, bytes.length);
  w.u8(L.R_BYTES).set(bytes);
  const saved = w.param(L.P_SEED);
  w.setParam(L.P_SEED, seed);
  w.fn('xxh3Bytes')(bytes.length);
  w.setParam(L.P_SEED, saved);
  return w.param(L.P_RESULT);
}

/**
 * Public-mode block seed (§1.2): 1337 + xxh3(lora, 0) + xxh3(namespace, 1), wrapping; empty
 * strings count as absent. Also leaves the seed in P_SEED, ready for hashBlocks.
 */
export function publicBlockSeed(loraName: string | null, cacheNamespace: string | null): bigint {
  const lora = loraName ? enc.encode(loraName) : EMPTY;
  const ns = cacheNamespace ? enc.encode(cacheNamespace) : EMPTY;
  const w = getWasm(), L = w.layout;
  w.reserve(L.R_BYTES, lora.length + ns.length);
  const b = w.u8(L.R_BYTES);
  b.set(lora, 0);
  b.set(ns, lora.length);
  w.fn('saltSeed')(lora.length, ns.length);
  return w.param(L.P_RESULT);
}

/**
 * Writes the per-block multimodal hashes of the first `count` blocks into R_MM_COUNTS /
 * R_MM_HASHES (reserving them) and returns how many hashes there are; 0 (nothing written)
 * when no block has any. It may grow memory: take other views after it.
 */
export function writeMmScratch(w: Wasm, mm: BlockMm, count: number): number {
  if (mm === null) return 0;
  let total = 0;
  for (let i = 0; i < count && i < mm.length; i++) total += mm[i]?.length ?? 0;
  if (total === 0) return 0;
  const L = w.layout;
  w.reserve(L.R_MM_COUNTS, count * 4);
  w.reserve(L.R_MM_HASHES, total * 8);
  const counts = w.u32(L.R_MM_COUNTS), hashes = w.u64(L.R_MM_HASHES);
  let j = 0;
  for (let i = 0; i < count; i++) {
    const m = mm[i] ?? null;
    counts[i] = m === null ? 0 : m.length;
    if (m !== null) for (const h of m) hashes[j++] = BigInt.asUintN(64, h);
  }
  return total;
}

/**
 * Hash the complete blocks of `tokens` into R_HASH_A[0..count) with `seed`; returns the count.
 * Reserves every region the call touches first (reserve does not keep contents), then writes
 * tokens (and mm counts / hashes when any block has mm info) and makes one wasm call.
 */
export function hashBlocksToScratch(tokens: ArrayLike<number>, blockSize: number, seed: bigint,
  opts?: BlockHashOptions): number {
  const w = getWasm(), L = w.layout;
  const n = tokens.length, eagle = opts?.eagle === true, mm = opts?.mm ?? null;
  const count = blockCount(n, blockSize, eagle);
  if (count === 0) return 0;
  w.reserve(L.R_TOKENS, n * 4);
  w.reserve(L.R_HASH_A, count * 8);
  const total = writeMmScratch(w, mm, count); // may grow memory: before the views below
  w.u32(L.R_TOKENS).set(tokens);
  w.setParam(L.P_SEED, seed);
  const r = w.fn('hashBlocks')(n, blockSize, eagle ? 1 : 0, total > 0 ? 1 : 0);
  if (r < 0) throw new RangeError(`hashBlocks: scratch region too small (status ${r})`);
  return r;
}

/**
 * Sequence hashes (§1.3) of the n local hashes already in R_HASH_A, into R_HASH_B[0..n).
 * `chainSeed` is PUBLIC_SEED in public mode, the keyed chain seed otherwise.
 */
export function chainToScratch(n: number, chainSeed: bigint): void {
  const w = getWasm(), L = w.layout;
  if (w.capacity(L.R_HASH_A) < n * 8) throw new RangeError(`chainToScratch: R_HASH_A holds fewer than ${n} hashes`);
  w.reserve(L.R_HASH_B, n * 8);
  w.setParam(L.P_CHAIN_SEED, chainSeed);
  w.fn('chainHashes')(n);
}

/** Local block hashes as bigints (cold convenience; seed defaults to PUBLIC_SEED). */
export function blockHashes(tokens: ArrayLike<number>, blockSize: number,
  opts: BlockHashOptions & { seed?: bigint } = {}): bigint[] {
  const n = hashBlocksToScratch(tokens, blockSize, opts.seed ?? PUBLIC_SEED, opts);
  const w = getWasm();
  return Array.from(w.u64(w.layout.R_HASH_A).subarray(0, n));
}

/** Sequence hashes of `locals` as bigints (cold convenience; chain seed defaults to PUBLIC_SEED). */
export function sequenceHashes(locals: readonly bigint[], chainSeed: bigint = PUBLIC_SEED): bigint[] {
  const w = getWasm(), L = w.layout, n = locals.length;
  if (n === 0) return [];
  w.reserve(L.R_HASH_A, n * 8);
  w.u64(L.R_HASH_A).set(locals.map((h) => BigInt.asUintN(64, h)));
  chainToScratch(n, chainSeed);
  return Array.from(w.u64(L.R_HASH_B).subarray(0, n));
}

/**
 * Typed API over the wasm hashing exports (assembly/hashing.ts; algorithms §1.2-§1.5).
 *
 * Hot callers use `hashBlocksToScratch` / `chainToScratch` and read the results in place through
 * `Wasm.locals()` / `Wasm.exts()` (no BigInt per hash). The `bigint[]` functions are cold
 * conveniences.
 */
import { getWasm, type BlockMm } from './wasm.js';

export type { BlockMm } from './wasm.js';

/** XXH3 seed of public-mode local block hashes and of the sequence-hash chain (1337). */
export const PUBLIC_SEED = 1337n;

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
  const w = getWasm();
  w.writeBytes(bytes);
  const saved = w.seed();
  w.setSeed(seed);
  w.exports.xxh3Bytes(bytes.length);
  w.setSeed(saved);
  return w.result();
}

/**
 * Public-mode block seed (§1.2): 1337 + xxh3(lora, 0) + xxh3(namespace, 1), wrapping; empty
 * strings count as absent. Also leaves the seed in P_SEED, ready for hashBlocks.
 */
export function publicBlockSeed(loraName: string | null, cacheNamespace: string | null): bigint {
  const lora = loraName ? enc.encode(loraName) : EMPTY;
  const ns = cacheNamespace ? enc.encode(cacheNamespace) : EMPTY;
  const w = getWasm();
  w.writeBytes(lora, ns);
  w.exports.saltSeed(lora.length, ns.length);
  return w.result();
}

/**
 * Hash the complete blocks of `tokens` into R_HASH_A[0..count) (`Wasm.locals()`) with `seed`;
 * returns the count. Writes tokens (and mm counts / hashes when any block has mm info) and makes
 * one wasm call.
 */
export function hashBlocksToScratch(tokens: ArrayLike<number>, blockSize: number, seed: bigint,
  opts?: BlockHashOptions): number {
  const w = getWasm();
  const n = tokens.length, eagle = opts?.eagle === true, mm = opts?.mm ?? null;
  const count = blockCount(n, blockSize, eagle);
  if (count === 0) return 0;
  w.reserveLocals(count);
  const total = w.writeMm(mm, count);
  w.writeTokens(tokens);
  w.setSeed(seed);
  const r = w.exports.hashBlocks(n, blockSize, eagle ? 1 : 0, total > 0 ? 1 : 0);
  if (r < 0) throw new RangeError(`hashBlocks: scratch region too small (status ${r})`);
  return r;
}

/**
 * Sequence hashes (§1.3) of the n local hashes already in R_HASH_A, into R_HASH_B[0..n)
 * (`Wasm.exts()`). `chainSeed` is PUBLIC_SEED in public mode, the keyed chain seed otherwise.
 */
export function chainToScratch(n: number, chainSeed: bigint): void {
  const w = getWasm();
  if (w.localsCapacity() < n) throw new RangeError(`chainToScratch: the local-hash scratch holds fewer than ${n} hashes`);
  w.reserveExts(n);
  w.setChainSeed(chainSeed);
  w.exports.chainHashes(n);
}

/** Local block hashes as bigints (cold convenience; seed defaults to PUBLIC_SEED). */
export function blockHashes(tokens: ArrayLike<number>, blockSize: number,
  opts: BlockHashOptions & { seed?: bigint } = {}): bigint[] {
  const n = hashBlocksToScratch(tokens, blockSize, opts.seed ?? PUBLIC_SEED, opts);
  return Array.from(getWasm().locals().subarray(0, n));
}

/** Sequence hashes of `locals` as bigints (cold convenience; chain seed defaults to PUBLIC_SEED). */
export function sequenceHashes(locals: readonly bigint[], chainSeed: bigint = PUBLIC_SEED): bigint[] {
  const w = getWasm(), n = locals.length;
  if (n === 0) return [];
  w.writeLocals(locals); // BigUint64Array.set wraps negative values mod 2^64
  chainToScratch(n, chainSeed);
  return Array.from(w.exts().subarray(0, n));
}

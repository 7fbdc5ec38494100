/**
 * Writes one decoded event into the wasm scratch regions and makes the one index call that
 * applies it (`storeTokensN` / `removeN`). The hot path copies typed-array ranges the decoder
 * already filled (token ids, (lo, hi) hash words) straight into linear memory: no BigInt and no
 * JS number per hash. Cold data is confined to what is rare on the wire: a LoRA name or cache
 * salt costs one cached seed, multimodal `extra_keys` a few BigInts per block that has them.
 */
import type { KvIndex } from '../../core/index/kv-index.js';
import type { Tier } from '../../core/index/index-types.js';
import type { Wasm } from '../../core/index/wasm.js';
import type { WasmPrefixIndex } from '../../core/index/wasm-index.js';
import { PUBLIC_SEED, publicBlockSeed, xxh3 } from '../../core/index/hashing.js';
import { mmHashesOfBlock, type DecodedBatch, type DecodedStored } from './decode.js';

/** Seeds of (lora_name, namespace) pairs as (lo, hi) words; bounded (cleared past the cap). */
const SEED_CACHE_MAX = 4096;
const seedCache = new Map<string, readonly [number, number]>();
const U32 = 0x1_0000_0000n;

/** The seed of the common event (no LoRA, no salt), without building a cache key. */
const PUBLIC_WORDS: readonly [number, number] = [Number(PUBLIC_SEED % U32), Number(PUBLIC_SEED / U32)];

function seedWords(lora: string | null, ns: string): readonly [number, number] {
  if (lora === null && ns === '') return PUBLIC_WORDS;
  const k = `${lora ?? ''}\u0000${ns}`;
  let w = seedCache.get(k);
  if (w === undefined) {
    const s = publicBlockSeed(lora, ns === '' ? null : ns);
    w = [Number(s % U32), Number(s / U32)];
    if (seedCache.size >= SEED_CACHE_MAX) seedCache.clear();
    seedCache.set(k, w);
  }
  return w;
}

export class IndexWriter {
  private readonly ix: WasmPrefixIndex;
  private readonly w: Wasm;

  constructor(index: KvIndex) {
    this.ix = index.index;
    this.w = this.ix.wasm;
  }

  /**
   * Store event `e` of `batch` on `slot`, hashing its tokens with the event's block size (the
   * caller checked it is the worker's) and the seed of (`e.loraName`, `ns`). Returns applied
   * blocks or a StoreStatus. Tokens beyond the event's blocks are not passed, so the hash output fits.
   */
  store(slot: number, e: DecodedStored, batch: DecodedBatch, ns: string): number {
    const n = e.count, blockSize = e.blockSize, tier = e.tier;
    const nTokens = Math.min(e.tokenCount, n * blockSize + (e.eagle ? 1 : 0));
    const seed = seedWords(e.loraName, ns);
    // Multimodal hashes first: computing them uses R_BYTES / P_SEED of the shared module.
    const mm = e.extraKeys === null ? null : this.mmOf(e, Math.min(n, e.extraKeys.length));
    const w = this.w;
    if (mm !== null) w.writeMm(mm, n);
    w.writeTokens(batch.tokens.subarray(e.tokenStart, e.tokenStart + nTokens));
    w.writeExtWords(batch.hashes.subarray(2 * e.hashStart, 2 * (e.hashStart + n)));
    w.setSeedWords(seed[0], seed[1]);
    w.setParentWords(e.parentLo, e.parentHi);
    return this.ix.storeTokensN(slot, tier, e.hasParent, n, nTokens, blockSize, e.eagle, mm !== null);
  }

  /** Remove hashes `[start, start + count)` of `words` from `slot`; returns how many it held. */
  remove(slot: number, tier: Tier, words: Uint32Array, start: number, count: number): number {
    this.w.writeExtWords(words.subarray(2 * start, 2 * (start + count)));
    return this.ix.removeN(slot, tier, count);
  }

  /** Per-block mm hashes from extra_keys (Dynamo `lib/kv-router/src/protocols.rs`), or null when no block has any. */
  private mmOf(e: DecodedStored, blocks: number): bigint[][] | null {
    let out: bigint[][] | null = null;
    for (let i = 0; i < blocks; i++) {
      const h = mmHashesOfBlock(e.extraKeys?.[i] ?? null, e.loraName, xxh3);
      if (h.length === 0) continue;
      out ??= Array.from({ length: blocks }, () => []);
      out[i] = h;
    }
    return out;
  }
}

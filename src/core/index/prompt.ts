/**
 * Prompt normalisation (Dynamo `lib/kv-router/src/services/selection/core/run.rs`, Dynamo `lib/kv-router/src/protocols.rs`): a request's prompt fields become
 *  - `locals`: PUBLIC local block hashes, what the index is queried with (always public);
 *  - `seq`: tracking (sequence) hashes, what active-load accounting dedups and what
 *    `/select_and_reserve` returns — public chain, keyed chain (`keyed-xxh3-v1`), or random
 *    per block when `assume_kv_reuse` is off;
 *  - `isl`: input length in tokens.
 * Token ids are hashed in wasm (one call for the blocks, one for the chain).
 */
import { getWasm } from './wasm.js';
import { PUBLIC_SEED, chainToScratch, hashBlocksToScratch, publicBlockSeed, type BlockMm } from './hashing.js';
import { deriveKeyedSeeds, type KeyedSeeds } from './tracking-hash.js';
import type { BlockExtraInfo } from '../wire/schemas.js';
import type { Rng } from '../random.js';
import {
  blockHashesRequired, hashLengthMismatch, islTokensRequired, islTokensZero, sequenceHashesRequired,
} from '../errors.js';

/** The prompt fields of a request after schema parsing. */
export interface PromptFields {
  token_ids?: number[];
  mm_routing_info?: { routing_token_ids: number[]; block_mm_infos?: (BlockExtraInfo | null)[] };
  block_mm_infos?: (BlockExtraInfo | null)[];
  block_hashes?: bigint[];
  sequence_hashes?: bigint[];
  isl_tokens?: number;
  lora_name?: string;
  cache_salt?: string;
  is_eagle?: boolean;
}

/** How tracking hashes are made (Dynamo `lib/kv-router/src/tracking_hash.rs`). */
export interface TrackingConfig {
  mode: 'public-xxh3-v1' | 'keyed-xxh3-v1';
  key: Uint8Array | null;
  keyId: string | null;
}

/** A partition's fixed hashing scope. */
export interface PromptScope { modelName: string; routingGroup: string; blockSize: number; isEagle: boolean }

/** A normalised prompt. `locals` is null on the hash-only path without block hashes. */
export interface NormalizedPrompt {
  isl: number;
  nBlocks: number;
  locals: BigUint64Array | null;
  seq: BigUint64Array;
  /** `seq` as (lo, hi) u32 words (same buffer). */
  seqWords: Uint32Array;
  loraName?: string;
  /** true when the hashes came from the request (trusted), not from tokens. */
  fromHashes: boolean;
}

const words = (a: BigUint64Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length * 2);

/**
 * Validates the hash-path fields (the exact 400 messages of Dynamo `lib/kv-router/src/services/selection/core/run.rs`) before anything else.
 * `requireBlockHashes` is false for explicit reservations (block hashes optional there).
 */
export function checkPromptFields(p: PromptFields, requireBlockHashes = true): void {
  if (hasTokens(p)) return;
  if (requireBlockHashes && p.block_hashes === undefined) throw blockHashesRequired();
  if (p.sequence_hashes === undefined) throw sequenceHashesRequired();
  if (p.isl_tokens === undefined) throw islTokensRequired();
  if (p.isl_tokens <= 0) throw islTokensZero();
  if (p.block_hashes !== undefined && p.block_hashes.length !== p.sequence_hashes.length) {
    throw hashLengthMismatch(p.block_hashes.length, p.sequence_hashes.length);
  }
}

function hasTokens(p: PromptFields): boolean {
  return (p.mm_routing_info !== undefined && p.mm_routing_info.routing_token_ids.length > 0) || p.token_ids !== undefined;
}

function mmOf(infos: (BlockExtraInfo | null)[] | undefined): BlockMm {
  if (!infos || infos.length === 0) return null;
  return infos.map((b) => (b === null || b.mm_objects.length === 0 ? null : b.mm_objects.map((o) => o.mm_hash)));
}

/** Normalises prompts for one service: caches keyed seeds per scope. */
export class PromptNormalizer {
  private readonly keyed = new Map<string, KeyedSeeds>();

  constructor(private readonly tracking: TrackingConfig, private readonly rng: Rng) {
    if (tracking.mode === 'keyed-xxh3-v1' && (!tracking.key || !tracking.keyId)) {
      throw new Error('keyed-xxh3-v1 tracking needs a key and a key id');
    }
  }

  /**
   * Normalises `p` for `scope` (call {@link checkPromptFields} first). `assumeKvReuse` false
   * gives random tracking hashes. Trusted hash inputs are used as given.
   */
  normalize(p: PromptFields, scope: PromptScope, assumeKvReuse: boolean): NormalizedPrompt {
    const routing = p.mm_routing_info !== undefined && p.mm_routing_info.routing_token_ids.length > 0 ? p.mm_routing_info : undefined;
    const tokens = routing ? routing.routing_token_ids : p.token_ids;
    if (tokens === undefined) {
      const seq = BigUint64Array.from(p.sequence_hashes ?? []);
      const locals = p.block_hashes ? BigUint64Array.from(p.block_hashes) : null;
      return { isl: p.isl_tokens ?? 0, nBlocks: seq.length, locals, seq, seqWords: words(seq), loraName: p.lora_name, fromHashes: true };
    }
    const eagle = p.is_eagle ?? scope.isEagle;
    const mm = mmOf(routing ? routing.block_mm_infos : p.block_mm_infos);
    const lora = p.lora_name || null, salt = p.cache_salt || null;
    const w = getWasm();
    const n = hashBlocksToScratch(tokens, scope.blockSize, publicBlockSeed(lora, salt), { eagle, mm });
    // one buffer for both arrays: a typed array of this size has its memory outside V8's heap,
    // and each such allocation costs ~1.5 us here (bench/RESULTS.md, selection on a quiet machine)
    const both = new BigUint64Array(2 * n);
    const locals = both.subarray(0, n), seq = both.subarray(n);
    if (n > 0) locals.set(w.locals().subarray(0, n));
    if (n > 0) {
      if (!assumeKvReuse) {
        for (let i = 0; i < n; i++) seq[i] = this.rng.u64();
      } else if (this.tracking.mode === 'public-xxh3-v1') {
        chainToScratch(n, PUBLIC_SEED);
        seq.set(w.exts().subarray(0, n));
      } else {
        const seeds = this.keyedSeeds(scope, salt, lora, eagle);
        hashBlocksToScratch(tokens, scope.blockSize, seeds.blockSeed, { eagle, mm });
        chainToScratch(n, seeds.chainSeed);
        seq.set(w.exts().subarray(0, n));
      }
    }
    return { isl: tokens.length, nBlocks: n, locals, seq, seqWords: words(seq), loraName: p.lora_name, fromHashes: false };
  }

  private keyedSeeds(scope: PromptScope, salt: string | null, lora: string | null, eagle: boolean): KeyedSeeds {
    const k = JSON.stringify([scope.modelName, scope.routingGroup, scope.blockSize, salt, lora, eagle]);
    let s = this.keyed.get(k);
    if (!s) {
      s = deriveKeyedSeeds(this.tracking.key as Uint8Array, this.tracking.keyId as string, {
        modelName: scope.modelName, routingGroup: scope.routingGroup, blockSize: scope.blockSize,
        cacheNamespace: salt, loraName: lora, isEagle: eagle,
      });
      if (this.keyed.size > 4096) this.keyed.clear();
      this.keyed.set(k, s);
    }
    return s;
  }
}

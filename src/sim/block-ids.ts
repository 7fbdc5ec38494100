/**
 * Block identities of trace requests at a fleet's block size.
 *
 * Trace hash_id `h` covers 512 tokens; at block size `bs` it expands into `512 / bs` blocks, and
 * block `sub` of `h` gets the numeric key `h * (512 / bs) + sub`. A request of `isl` tokens
 * references the first `ceil(isl / bs)` blocks of its expanded chain (its last block may be
 * partial; like the trace, we treat it as a cacheable unit).
 *
 * Why hashes and not token ids: the simulator feeds the core through the trusted hash path
 * (`block_hashes` + `sequence_hashes` + `isl_tokens`, Dynamo `lib/kv-router/src/services/selection/core/run.rs`) instead of synthesising token ids.
 * The trace only says which 512-token blocks are equal, so synthetic tokens would carry no more
 * information; they would cost ~145M token ids per policy on the conversation trace (12,035
 * tokens per request on average) to build, validate and hash, and the index would see exactly
 * the same prefix structure. A hash_id at a position names its whole prefix (the trace's own
 * remapping), so one hash per (id, sub) is a consistent prefix identity, like a chained hash.
 *
 * Three unrelated 64-bit identities per key, as in a real deployment: `local` (the token-content
 * hash the router matches with), `ext` (the engine's block hash in KV events) and `seq` (the
 * tracking hash of active-load accounting). Each is a bijection of the key (no collisions),
 * computed with 32-bit arithmetic and read out through one 8-byte scratch: one BigInt per hash.
 */
import { TRACE_BLOCK_TOKENS, type Trace } from './trace.js';

const scratch = new BigUint64Array(1);
const words = new Uint32Array(scratch.buffer);

/** murmur3's fmix32: a bijection of u32. */
function fmix32(x: number): number {
  x ^= x >>> 16; x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13; x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** A bijective 64-bit mixing of a key below 2^53, salted. */
function mix(key: number, saltLo: number, saltHi: number): bigint {
  const lo = fmix32((key >>> 0) ^ saltLo);
  words[0] = lo;
  words[1] = fmix32((Math.floor(key / 0x100000000) ^ saltHi ^ Math.imul(lo, 0x9e3779b1)) >>> 0);
  return scratch[0];
}

/** Block keys and hashes of one trace at one block size. */
export class BlockIds {
  /** Blocks per trace hash_id. */
  readonly per: number;

  constructor(readonly trace: Trace, readonly blockSize: number) {
    const per = TRACE_BLOCK_TOKENS / blockSize;
    if (!Number.isInteger(blockSize) || blockSize < 1 || !Number.isInteger(per)) {
      throw new RangeError(`block size ${blockSize} must divide ${TRACE_BLOCK_TOKENS} (the trace's tokens per hash_id)`);
    }
    this.per = per;
  }

  /** Input tokens of request `i` (at least 1: the API rejects an empty prompt). */
  isl(i: number): number { return Math.max(1, this.trace.inputLength[i]); }

  /** Blocks request `i` references: `ceil(isl / block_size)`, within its hash_ids. */
  count(i: number): number {
    const t = this.trace;
    return Math.min(Math.ceil(this.isl(i) / this.blockSize), (t.offsets[i + 1] - t.offsets[i]) * this.per);
  }

  /** The keys of request `i`, root first, written into `out` (resized). */
  keys(i: number, out: number[]): number[] {
    const n = this.count(i), per = this.per, ids = this.trace.hashIds, off = this.trace.offsets[i];
    out.length = n;
    for (let b = 0; b < n; b++) out[b] = ids[off + Math.floor(b / per)] * per + (b % per);
    return out;
  }

  /** Router-side token-content hash of a block. */
  local(key: number): bigint { return localHash(key); }
  /** Engine block hash (KV events). */
  ext(key: number): bigint { return extHash(key); }
  /** Tracking (sequence) hash for active-load accounting. */
  seq(key: number): bigint { return seqHash(key); }
}

/** Router-side token-content hash of block key `key` (< 2^53): the one mapping the simulator, the benches and the tests use. */
export function localHash(key: number): bigint { return mix(key, 0x6a09e667, 0xbb67ae85); }
/** Engine block hash (KV events) of block key `key`. */
export function extHash(key: number): bigint { return mix(key, 0x3c6ef372, 0xa54ff53a); }
/** Tracking (sequence) hash of block key `key`. */
export function seqHash(key: number): bigint { return mix(key, 0x510e527f, 0x9b05688c); }

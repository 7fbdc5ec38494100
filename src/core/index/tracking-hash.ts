/**
 * Tracking-hash seeds (Dynamo `lib/kv-router/src/protocols.rs`, `lib/kv-router/src/tracking_hash.rs`).
 *
 * Public mode: one XXH3 seed from LoRA name and cache namespace, used for both the local block
 * hash and (via 1337) the chain. Keyed mode (`keyed-xxh3-v1`): a BLAKE3 keyed hash of a framed
 * scope yields a block seed and a chain seed, so tracking identities shipped between routers are
 * not guessable from tokens. Seeds are derived once per scope + request options (cold path), so
 * bigint is fine here; the hot hashing itself is done in wasm with these seeds.
 *
 * Framing (tracking_hash.rs), all integers little-endian:
 * ```
 *   DOMAIN  = "dynamo.router.tracking-hash/keyed-xxh3-v1\0"
 *   fixed   = [tag] ++ u64(len) ++ bytes
 *   string  = fixed(tag, utf8)
 *   option  = [tag, 0]  |  [tag, 1] ++ u64(len) ++ utf8      ("" counts as absent)
 *   blake3_keyed(key, DOMAIN ++ string(1,key_id) ++ string(2,model) ++ string(3,group)
 *                ++ fixed(4,u32(block_size)) ++ option(5,cache_ns) ++ option(6,lora)
 *                ++ fixed(7,[is_eagle]))
 *   block_seed = u64(digest[0..8]); chain_seed = u64(digest[8..16])
 * ```
 */
import { blake3 } from '@noble/hashes/blake3.js';
import { ConfigError } from '../config/config.js';

/** Size of the provider key file, in raw bytes. */
export const TRACKING_KEY_BYTES = 32;

/** Base seed of the public XXH3 hashes (`XXH3_SEED = 1337`): public-mode local block hashes and the sequence-hash chain. */
export const PUBLIC_SEED = 1337n;

const U64 = (1n << 64n) - 1n;
const utf8 = new TextEncoder();

/** Domain separator of keyed-xxh3-v1, including its trailing NUL. */
export const KEYED_DOMAIN: Uint8Array = utf8.encode('dynamo.router.tracking-hash/keyed-xxh3-v1\0');

/** The stable scope mixed into keyed seeds. */
export interface TrackingScope {
  readonly modelName: string;
  readonly routingGroup: string;
  readonly blockSize: number;
  readonly cacheNamespace: string | null;
  readonly loraName: string | null;
  readonly isEagle: boolean;
}

/** The two seeds of keyed mode. */
export interface KeyedSeeds {
  readonly blockSeed: bigint;
  readonly chainSeed: bigint;
}

function u64le(n: number | bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n), true);
  return out;
}

/**
 * Validates the contents of the key file: exactly 32 raw bytes. Returns a copy (the caller may
 * wipe its buffer). Throws {@link ConfigError} naming the requirement, never the key bytes.
 */
export function parseTrackingKey(bytes: Uint8Array): Uint8Array {
  if (bytes.length !== TRACKING_KEY_BYTES) {
    throw new ConfigError([
      `DYN_ROUTER_TRACKING_KEY_FILE / --router-tracking-key-file: router tracking key file must contain exactly ${TRACKING_KEY_BYTES} raw bytes; found ${bytes.length}`,
    ]);
  }
  return Uint8Array.from(bytes);
}

/**
 * Derives the keyed-xxh3-v1 block and chain seeds for one scope (tracking_hash.rs). `key` must be 32 bytes;
 * empty `cacheNamespace`/`loraName` are treated as absent.
 */
export function deriveKeyedSeeds(key: Uint8Array, keyId: string, scope: TrackingScope): KeyedSeeds {
  if (key.length !== TRACKING_KEY_BYTES) throw new RangeError(`tracking key must be ${TRACKING_KEY_BYTES} bytes`);
  const bs = scope.blockSize;
  if (!Number.isInteger(bs) || bs < 0 || bs > 0xffffffff) throw new RangeError(`block_size ${bs} is not a u32`);
  const h = blake3.create({ key });
  const fixed = (tag: number, v: Uint8Array): void => {
    h.update(Uint8Array.of(tag));
    h.update(u64le(v.length));
    h.update(v);
  };
  const optional = (tag: number, s: string | null): void => {
    if (s === null || s === '') {
      h.update(Uint8Array.of(tag, 0));
      return;
    }
    const v = utf8.encode(s);
    h.update(Uint8Array.of(tag, 1));
    h.update(u64le(v.length));
    h.update(v);
  };
  const blockSize = new Uint8Array(4);
  new DataView(blockSize.buffer).setUint32(0, bs, true);

  h.update(KEYED_DOMAIN);
  fixed(1, utf8.encode(keyId));
  fixed(2, utf8.encode(scope.modelName));
  fixed(3, utf8.encode(scope.routingGroup));
  fixed(4, blockSize);
  optional(5, scope.cacheNamespace);
  optional(6, scope.loraName);
  fixed(7, Uint8Array.of(scope.isEagle ? 1 : 0));
  const digest = h.digest();
  const view = new DataView(digest.buffer, digest.byteOffset, digest.byteLength);
  return { blockSeed: view.getBigUint64(0, true), chainSeed: view.getBigUint64(8, true) };
}

/**
 * Public-mode block-hash seed (protocols.rs): `1337 + xxh3(lora, 0) + xxh3(ns, 1)`, wrapping mod 2^64;
 * empty strings count as absent. `xxh3(bytes, seed)` is the caller's XXH3-64 (wasm in the
 * service, a reference implementation in tests).
 */
export function publicSeed(
  loraName: string | null | undefined,
  cacheNamespace: string | null | undefined,
  xxh3: (bytes: Uint8Array, seed: bigint) => bigint,
): bigint {
  let s = PUBLIC_SEED;
  if (loraName) s = (s + xxh3(utf8.encode(loraName), 0n)) & U64;
  if (cacheNamespace) s = (s + xxh3(utf8.encode(cacheNamespace), 1n)) & U64;
  return s;
}

/**
 * Decoder for the KV-cache event batches vLLM / SGLang publish over ZeroMQ (frame 3 of
 * `[topic, seq, payload]`). Wire formats: vLLM's `vllm/distributed/kv_events.py`, SGLang's
 * `python/sglang/srt/disaggregation/kv_events.py` and Dynamo `lib/kv-router/src/zmq_wire/`,
 * `lib/kv-router/src/protocols.rs`; captured bytes in test/fixtures/vllm-kv-events/.
 *
 * One pass over the msgpack bytes: block hashes go straight into a reusable `Uint32Array` as
 * (lo, hi) u32 pairs (never through a JS number or a per-hash BigInt; the caller copies them into
 * WebAssembly memory), token ids into a reusable `Uint32Array`. Only cold data (per-block
 * `extra_keys` contents, metadata maps) becomes JS values.
 *
 * Errors: a structural problem (truncated/invalid msgpack, wrong batch shape) throws
 * {@link KvDecodeError}; a bad individual event (unknown tag, `Ignored`, unknown medium, REMOTE or
 * unknown locality, wrong field type, missing field) is skipped and counted in `dropped`.
 */
import { Tier } from '../../core/index/index-types.js';
import { DROP_EVENT, KvDecodeError, MsgpackCursor, keyTable } from './msgpack-reader.js';

// Tier is the core index's tier type (same values the brief lists: Device 0, Host 1, Disk 2,
// External 3), re-exported so a decoded event's tier goes into the index without mapping.
export { Tier, KvDecodeError };

/** u64 values as (lo, hi) u32 pairs: value i at [2i] (low 32 bits) and [2i+1] (high 32 bits). */
export interface HashSink { words: Uint32Array }

/** A `BlockStored` event. Hashes/tokens are ranges into the batch's shared buffers. */
export interface DecodedStored {
  kind: 'stored'; tier: Tier;
  /** false: root (parent_block_hash nil); parentLo/parentHi are then 0. */
  hasParent: boolean; parentLo: number; parentHi: number;
  /** Block hashes are entries [hashStart, hashStart+count) of batch.hashes. */
  hashStart: number; count: number;
  /** Token ids are tokens[tokenStart .. tokenStart+tokenCount) (already flattened when `eagle`). */
  tokenStart: number; tokenCount: number;
  blockSize: number;
  /** `lora_name`; "" is reported as null (Dynamo `lib/kv-router/src/protocols.rs` treats "" as absent). */
  loraName: string | null;
  /** Top-level `cache_salt`, else the `dynamo-cache-salt:` tag in extra_keys[0] (Dynamo `protocols.rs`); no parent inheritance. */
  cacheSalt: string | null;
  /** Raw per-block extra_keys (cold data, generic-decoded). */
  extraKeys: (unknown[] | null)[] | null;
  /** token_ids arrived as bigram pairs and were flattened to [a0..a_last, b_last] (EAGLE). */
  eagle: boolean;
  groupIdx: number | null; kvCacheSpecKind: string | null;
}
/** A `BlockRemoved` event. */
export interface DecodedRemoved { kind: 'removed'; tier: Tier; hashStart: number; count: number; groupIdx: number | null }
/** An `AllBlocksCleared` event. */
export interface DecodedCleared { kind: 'cleared' }
export type DecodedEvent = DecodedStored | DecodedRemoved | DecodedCleared;

/**
 * One decoded batch. `hashes`/`tokens`/`events` are the decoder's own buffers, and its
 * BlockRemoved events the decoder's own objects: valid until the next decode().
 */
export interface DecodedBatch {
  ts: number;
  /** `data_parallel_rank` / SGLang `attn_dp_rank`; null when absent or nil. */
  dpRank: number | null;
  events: DecodedEvent[];
  /** (lo, hi) u32 pairs, see {@link HashSink}; only the first 2*hashCount words are meaningful. */
  hashes: Uint32Array; hashCount: number;
  tokens: Uint32Array; tokenCount: number;
  /** Events dropped: unknown/Ignored tag, unknown medium, REMOTE/unknown locality, wrong shape. */
  dropped: number;
}

const enc = new TextEncoder();
const CACHE_SALT_PREFIX = 'dynamo-cache-salt:';
const TAG_STORED = enc.encode('BlockStored');
const TAG_REMOVED = enc.encode('BlockRemoved');
const TAG_CLEARED = enc.encode('AllBlocksCleared');

// Map keys (matched by comparing bytes: no string is built per key).
const enum K { Type, Hashes, Parent, Tokens, BlockSize, Medium, LoraName, CacheSalt, ExtraKeys, Group, Kind, Locality, Ts, Events, DpRank, AttnDpRank }
const EVENT_KEYS = keyTable([['type', K.Type], ['block_hashes', K.Hashes], ['parent_block_hash', K.Parent],
  ['token_ids', K.Tokens], ['block_size', K.BlockSize], ['medium', K.Medium], ['lora_name', K.LoraName],
  ['cache_salt', K.CacheSalt], ['extra_keys', K.ExtraKeys], ['group_idx', K.Group],
  ['kv_cache_spec_kind', K.Kind], ['locality', K.Locality]]);
const BATCH_KEYS = keyTable([['ts', K.Ts], ['events', K.Events], ['data_parallel_rank', K.DpRank], ['attn_dp_rank', K.AttnDpRank]]);

/**
 * `medium` -> tier (Dynamo `lib/kv-router/src/indexer/lower_tier.rs`). Case-sensitive, exactly as Dynamo's `from_kv_medium` matches
 * (a Rust `match` on the literal strings; no case folding anywhere in the spec). nil/"" -> Device.
 */
const MEDIUM_TIER: ReadonlyMap<string, Tier> = new Map<string, Tier>([
  ['', Tier.Device], ['GPU', Tier.Device], ['DEVICE', Tier.Device],
  ['CPU', Tier.Host], ['CPU_PINNED', Tier.Host], ['CPU_TIER1', Tier.Host],
  ['CPU_TIER2', Tier.Disk], ['DISK', Tier.Disk], ['NVME', Tier.Disk], ['STORAGE', Tier.Disk],
  ['EXTERNAL', Tier.External], ['NETWORK', Tier.External], ['REMOTE', Tier.External], ['SHARED', Tier.External],
]);

/** True for the main-attention KV group kinds (Dynamo `zmq_wire/`). null -> false: "group 0 with no kind" is the caller's rule. */
export function isMainAttentionKind(kind: string | null): boolean {
  return kind === 'full_attention' || kind === 'mla_attention' || kind === 'sink_full_attention';
}

const MEDIUM_KEYS = keyTable([...MEDIUM_TIER]);
const LOCAL = enc.encode('LOCAL');

const HEX64 = /^[0-9a-fA-F]{64}$/;

/**
 * Multimodal hashes of one block from its extra_keys (Dynamo `lib/kv-router/src/protocols.rs`, event side), in the order
 * found (the caller sorts). Bare string: MM only if a 64-char hex digest -> u64 of its first 16 hex
 * chars; skipped when equal to `loraName` or tagged `dynamo-cache-salt:` (these two skips apply to
 * bare strings only, as Dynamo's `protocols.rs` reads them). `[identifier, offset]`
 * with a non-empty string identifier: 64-hex -> first 16 hex chars, else `xxh3(utf8(id), 0)`.
 * Other items (bytes, numbers, ...) are not MM. `xxh3` is only called for non-hex identifiers and
 * must be given when they can occur (throws TypeError otherwise: a silently wrong hash is worse).
 */
export function mmHashesOfBlock(extraKeys: unknown[] | null, loraName: string | null,
  xxh3?: (bytes: Uint8Array, seed: bigint) => bigint): bigint[] {
  const out: bigint[] = [];
  if (!extraKeys) return out;
  for (const item of extraKeys) {
    if (typeof item === 'string') {
      if ((loraName && item === loraName) || item.startsWith(CACHE_SALT_PREFIX)) continue;
      if (HEX64.test(item)) out.push(BigInt('0x' + item.slice(0, 16)));
    } else if (Array.isArray(item) && item.length === 2 && typeof item[0] === 'string' && item[0].length > 0) {
      const id: string = item[0];
      if (HEX64.test(id)) out.push(BigInt('0x' + id.slice(0, 16)));
      else if (xxh3) out.push(BigInt.asUintN(64, xxh3(enc.encode(id), 0n)));
      else throw new TypeError('mmHashesOfBlock: xxh3 is required for non-hex MM identifiers');
    }
  }
  return out;
}

/** Dynamo `protocols.rs`: the first bare string of extra_keys[0] tagged `dynamo-cache-salt:` (first item equal to lora_name skipped). */
function saltFromExtraKeys(extraKeys: (unknown[] | null)[] | null, loraName: string | null): string | null {
  const first = extraKeys?.[0];
  if (!first) return null;
  let unmatchedLora = loraName; // already null when ""
  for (const item of first) {
    if (typeof item !== 'string') continue;
    if (unmatchedLora !== null && item === unmatchedLora) { unmatchedLora = null; continue; }
    if (item.length > CACHE_SALT_PREFIX.length && item.startsWith(CACHE_SALT_PREFIX)) return item.slice(CACHE_SALT_PREFIX.length);
  }
  return null;
}

/**
 * Decodes KV event batches. Holds the reusable hash/token buffers: each decode() overwrites them,
 * so a returned batch (its `hashes`, `tokens`, `events` and BlockRemoved objects) is valid only
 * until the next decode() call on the same decoder. Not reentrant; use one decoder per listener.
 */
export class KvBatchDecoder implements HashSink {
  /** Hash words of the last batch (grows by doubling; replaced, not resized, so re-read after decode()). */
  words: Uint32Array = new Uint32Array(8192);
  private tok: Uint32Array = new Uint32Array(65536);
  private hashCount = 0;
  private tokenCount = 0;
  private readonly r = new MsgpackCursor();
  private readonly tmp = new Uint32Array(2); // parent hash scratch (lo, hi)
  private eagle = false;
  /**
   * BlockRemoved events are reused from one decode() to the next (like the hash and token
   * buffers): vLLM sends one per evicted block, and a fresh object for each was most of the
   * event path's young-generation garbage (its scavenges landed in selection latency;
   * bench/RESULTS.md, second pass). At most {@link REMOVED_POOL_MAX} are kept.
   */
  private readonly removedPool: DecodedRemoved[] = [];
  /** The events of the last batch. */
  private readonly eventList: DecodedEvent[] = [];
  private removedUsed = 0;

  /** Decodes one payload; throws {@link KvDecodeError} when the batch itself is undecodable. */
  decode(payload: Uint8Array): DecodedBatch {
    const r = this.r;
    r.reset(payload);
    this.hashCount = 0;
    this.tokenCount = 0;
    this.removedUsed = 0;
    try {
      let ts = NaN, dpRank: number | null = null, attnRank: number | null = null;
      let events: DecodedEvent[] | null = null;
      const acc = { dropped: 0 };
      const n = r.arrayHeader();
      if (n >= 0) {
        if (n < 2) throw new KvDecodeError('bad_batch', `batch array of ${n} elements`);
        ts = this.ts();
        events = this.events(acc);
        if (n >= 3) dpRank = this.rank();
        r.skip(n - Math.min(n, 3));
      } else {
        const m = r.mapHeader();
        if (m < 0) throw new KvDecodeError('bad_batch', 'batch is neither an array nor a map');
        for (let i = 0; i < m; i++) {
          switch (this.r.key(BATCH_KEYS)) {
            case K.Ts: ts = this.ts(); break;
            case K.Events: events = this.events(acc); break;
            case K.DpRank: dpRank = this.rank(); break;
            case K.AttnDpRank: attnRank = this.rank(); break;
            default: r.skip(1);
          }
        }
      }
      if (Number.isNaN(ts) || events === null) throw new KvDecodeError('bad_batch', 'batch map needs ts and events');
      if (r.pos !== r.end) throw new KvDecodeError('trailing_bytes', `${r.end - r.pos} bytes after the batch`);
      return { ts, dpRank: dpRank ?? attnRank, events, hashes: this.words, hashCount: this.hashCount,
        tokens: this.tok, tokenCount: this.tokenCount, dropped: acc.dropped };
    } catch (e) {
      if (e instanceof KvDecodeError) throw e;
      // Safety net: nothing else should escape, but a listener must never die on a payload.
      throw new KvDecodeError(e === DROP_EVENT ? 'bad_batch' : 'internal', e instanceof Error ? e.message : 'undecodable batch');
    }
  }

  private ts(): number {
    const ts = this.r.number();
    if (Number.isNaN(ts)) throw new KvDecodeError('bad_batch', 'ts is not a number');
    return ts;
  }

  private rank(): number | null {
    if (this.r.nil()) return null;
    const v = this.r.u32Value();
    if (v < 0) throw new KvDecodeError('bad_batch', 'data_parallel_rank is not a non-negative integer');
    return v;
  }

  private events(acc: { dropped: number }): DecodedEvent[] {
    const r = this.r;
    const n = r.arrayHeader();
    if (n < 0) throw new KvDecodeError('bad_batch', 'events is not an array');
    // One array per decoder, reused like the hash and token buffers (growing a fresh array per
    // batch was a sixth of the event path's allocations); trimmed to the batch's events below.
    const out = this.eventList;
    let k = 0;
    for (let i = 0; i < n; i++) {
      const start = r.pos, h0 = this.hashCount, t0 = this.tokenCount;
      try {
        let m = r.arrayHeader();
        let e: DecodedEvent;
        if (m >= 0) e = this.positional(m);
        else {
          m = r.mapHeader();
          if (m < 0) throw DROP_EVENT;
          e = this.mapEvent(m);
        }
        out[k++] = e; // only once decoded: a dropped event leaves no slot
      } catch (e) {
        if (e !== DROP_EVENT) throw e;
        // Rewind and skip the event structurally (throws if the bytes themselves are broken).
        r.pos = start; this.hashCount = h0; this.tokenCount = t0;
        r.skip(1);
        acc.dropped++;
      }
    }
    out.length = k;
    return out;
  }

  /** 0 stored, 1 removed, 2 cleared; anything else (incl. `Ignored`, non-str) drops the event. */
  private tag(): number {
    const r = this.r;
    if (r.strEquals(TAG_STORED)) return 0;
    if (r.strEquals(TAG_REMOVED)) return 1;
    if (r.strEquals(TAG_CLEARED)) return 2;
    throw DROP_EVENT;
  }

  private medium(): Tier {
    const r = this.r;
    if (r.nil()) return Tier.Device;
    // matched on the bytes: a string per event was a third of the event path's allocations
    const t = r.key(MEDIUM_KEYS);
    if (t < 0) throw DROP_EVENT; // unknown medium fails closed (vLLM 0.26 FS/OBJ, typos, non-str)
    return t as Tier;
  }

  /** `locality`: nil/LOCAL kept; REMOTE, anything else or a non-string drops the event (Dynamo `indexer/lower_tier.rs`). */
  private locality(): void {
    const r = this.r;
    if (!r.nil() && !r.strEquals(LOCAL)) throw DROP_EVENT;
  }

  /** block_hashes array -> appended to `words`; returns the first entry index (count = hashCount - start). */
  private hashes(): number {
    const r = this.r;
    const n = r.arrayHeader();
    if (n < 0) throw DROP_EVENT;
    const start = this.hashCount;
    if ((start + n) * 2 > this.words.length) this.words = grow(this.words, (start + n) * 2, start * 2);
    const w = this.words, b = r.buf, end = r.end;
    let p = r.pos, o = start * 2;
    // Inlined fast path for the encodings real vLLM batches use (cf uint64, fixint); the rest goes
    // through r.hash(). Measured on a hash-only batch (64 BlockRemoved x 32 cf hashes): 24 µs vs
    // 36 µs per batch when every hash calls r.hash() (~1.5x).
    for (let i = 0; i < n; i++, o += 2) {
      const t = b[p];
      if (t === 0xcf && p + 9 <= end) {
        w[o + 1] = ((b[p + 1] << 24) | (b[p + 2] << 16) | (b[p + 3] << 8) | b[p + 4]) >>> 0;
        w[o] = ((b[p + 5] << 24) | (b[p + 6] << 16) | (b[p + 7] << 8) | b[p + 8]) >>> 0;
        p += 9;
      } else if (t <= 0x7f) { w[o] = t; w[o + 1] = 0; p++; }
      else { r.pos = p; this.r.hash(w, o); p = r.pos; } // also throws `truncated` past the end
    }
    r.pos = p;
    this.hashCount = start + n;
    return start;
  }

  /** token_ids -> appended to `tok`; sets `this.eagle`; returns the start index. */
  private tokens(): number {
    const r = this.r;
    const n = r.arrayHeader();
    if (n < 0) throw DROP_EVENT;
    const start = this.tokenCount;
    if (start + n + 1 > this.tok.length) this.tok = grow(this.tok, start + n + 1, start);
    const out = this.tok;
    this.eagle = n > 0 && isArrayByte(r.peek());
    if (this.eagle) {
      // EAGLE bigrams [(a0,b0),(a1,b1),...] -> [a0, a1, ..., a_last, b_last].
      let last = 0;
      for (let i = 0; i < n; i++) {
        if (r.arrayHeader() !== 2) throw DROP_EVENT;
        const a = r.u32Value(); last = r.u32Value();
        if (a < 0 || last < 0) throw DROP_EVENT;
        out[start + i] = a;
      }
      out[start + n] = last;
      this.tokenCount = start + n + 1;
      return start;
    }
    this.eagle = false;
    const b = r.buf, end = r.end;
    let p = r.pos, o = start;
    // Table-driven, nearly branch-free: real token ids mix cd (< 65536) and ce encodings at random,
    // and an if-chain on the type byte mispredicts. Measured on this host over 32,768 random
    // cd/ce tokens: 5.9 ns/token vs 12.5 ns for the if-chain (equal on single-width data).
    for (let i = 0; i < n; i++) {
      const t = b[p], size = TOKEN_SIZE[t];
      if (size !== 0 && p + 5 <= end) {
        const w = ((b[p + 1] << 24) | (b[p + 2] << 16) | (b[p + 3] << 8) | b[p + 4]) >>> TOKEN_SHIFT[t];
        out[o++] = size === 1 ? t : w;
        p += size;
      } else { r.pos = p; const v = r.u32Value(); if (v < 0) throw DROP_EVENT; out[o++] = v; p = r.pos; }
    }
    r.pos = p;
    this.tokenCount = o;
    return start;
  }

  private stored(parent: boolean, hashStart: number, tokenStart: number, eagle: boolean, blockSize: number,
    tier: Tier, loraName: string | null, cacheSalt: string | null, extraKeys: (unknown[] | null)[] | null,
    groupIdx: number | null, kind: string | null): DecodedStored {
    if (loraName === '') loraName = null;
    if (cacheSalt === '' || cacheSalt === null) cacheSalt = saltFromExtraKeys(extraKeys, loraName);
    return { kind: 'stored', tier, hasParent: parent, parentLo: parent ? this.tmp[0] : 0, parentHi: parent ? this.tmp[1] : 0,
      hashStart, count: this.hashCount - hashStart, tokenStart, tokenCount: this.tokenCount - tokenStart, blockSize,
      loraName, cacheSalt, extraKeys, eagle, groupIdx, kvCacheSpecKind: kind };
  }

  /** A BlockRemoved of hashes [hashStart, hashCount): a pooled object while the pool lasts. */
  private removed(tier: Tier, hashStart: number, groupIdx: number | null): DecodedRemoved {
    const count = this.hashCount - hashStart;
    if (this.removedUsed >= REMOVED_POOL_MAX) return { kind: 'removed', tier, hashStart, count, groupIdx };
    let e = this.removedPool[this.removedUsed];
    if (e === undefined) {
      e = { kind: 'removed', tier, hashStart, count, groupIdx };
      this.removedPool.push(e);
    } else {
      e.tier = tier; e.hashStart = hashStart; e.count = count; e.groupIdx = groupIdx;
    }
    this.removedUsed++;
    return e;
  }

  /** A parent_block_hash (or nil): fills `tmp`, returns whether one was present. */
  private parent(): boolean {
    if (this.r.nil()) return false;
    this.r.hash(this.tmp, 0);
    return true;
  }

  /**
   * Tag-first array event. BlockStored: [tag, hashes, parent, tokens, block_size, lora_id, medium,
   * lora_name, extra_keys, group_idx, kind, sliding_window, locality, source_kind/ownership, metadata...]
   * (older forms stop earlier). The tail (>= 9) is typed loosely, as Dynamo's v1.2-compat parser
   * does: a slot of an unexpected type counts as absent, except locality, which fails closed.
   * BlockRemoved: [tag, hashes, medium, group_idx, kind, sliding_window, locality, ...].
   */
  private positional(n: number): DecodedEvent {
    const r = this.r;
    if (n < 1) throw DROP_EVENT;
    const tag = this.tag();
    if (tag === 2) { r.skip(n - 1); return { kind: 'cleared' }; }
    if (tag === 1) {
      if (n < 2) throw DROP_EVENT;
      const hashStart = this.hashes();
      const tier = n > 2 ? this.medium() : Tier.Device;
      const groupIdx = n > 3 ? this.r.optU32(false) : null;
      if (n > 4) r.skip(Math.min(n, 6) - 4); // kind, sliding_window
      if (n > 6) this.locality();
      if (n > 7) r.skip(n - 7);
      return this.removed(tier, hashStart, groupIdx);
    }
    if (n < 5) throw DROP_EVENT;
    const hashStart = this.hashes();
    const parent = this.parent();
    const tokenStart = this.tokens();
    const eagle = this.eagle;
    const blockSize = r.u32Value();
    if (blockSize < 0) throw DROP_EVENT;
    if (n > 5) r.skip(1); // lora_id: deprecated, ignored
    const tier = n > 6 ? this.medium() : Tier.Device;
    let loraName: string | null = null, salt: string | null = null;
    if (n > 7) {
      // SGLang once put a {cache_salt} metadata map in the lora_name slot: accept it as metadata.
      if (isMapByte(r.peek())) salt = metaSalt(r.readValue(0));
      else loraName = this.r.optStr(true);
    }
    const extraKeys = n > 8 ? this.r.extraKeys() : null;
    const groupIdx = n > 9 ? this.r.optU32(false) : null;
    const kind = n > 10 ? this.r.optStr(false) : null;
    if (n > 11) r.skip(1); // kv_cache_spec_sliding_window
    if (n > 12) this.locality();
    if (n > 13) r.skip(1); // source_kind / ownership
    for (let i = 14; i < n; i++) { // trailing metadata, e.g. SGLang's {cache_salt} at 14
      if (isMapByte(r.peek())) salt ??= metaSalt(r.readValue(0));
      else r.skip(1);
    }
    return this.stored(parent, hashStart, tokenStart, eagle, blockSize, tier, loraName, salt, extraKeys, groupIdx, kind);
  }

  /** Map event tagged by "type"; keys in any order, unknown keys ignored. Field types are strict. */
  private mapEvent(n: number): DecodedEvent {
    const r = this.r, h0 = this.hashCount, t0 = this.tokenCount;
    let tag = -1, hashStart = -1, tokenStart = -1, blockSize = -1, parent = false, eagle = false;
    let tier: Tier = Tier.Device, loraName: string | null = null, salt: string | null = null;
    let extraKeys: (unknown[] | null)[] | null = null, groupIdx: number | null = null, kind: string | null = null;
    for (let i = 0; i < n; i++) {
      switch (this.r.key(EVENT_KEYS)) {
        case K.Type: tag = this.tag(); break;
        case K.Hashes: hashStart = this.hashes(); break;
        case K.Parent: parent = this.parent(); break;
        case K.Tokens: tokenStart = this.tokens(); eagle = this.eagle; break;
        case K.BlockSize: blockSize = r.u32Value(); if (blockSize < 0) throw DROP_EVENT; break;
        case K.Medium: tier = this.medium(); break;
        case K.LoraName: loraName = this.r.optStr(true); break;
        case K.CacheSalt: salt = this.r.optStr(true); break;
        case K.ExtraKeys: extraKeys = this.r.extraKeys(); break;
        case K.Group: groupIdx = this.r.optU32(true); break;
        case K.Kind: kind = this.r.optStr(true); break;
        case K.Locality: this.locality(); break;
        default: r.skip(1);
      }
    }
    this.tokenCount = tag === 0 ? this.tokenCount : t0; // stray token_ids of removed/cleared events: discarded
    if (tag === 2) { this.hashCount = h0; return { kind: 'cleared' }; }
    if (tag < 0 || hashStart < 0) throw DROP_EVENT;
    if (tag === 1) return this.removed(tier, hashStart, groupIdx);
    if (tokenStart < 0 || blockSize < 0) throw DROP_EVENT;
    return this.stored(parent, hashStart, tokenStart, eagle, blockSize, tier, loraName, salt, extraKeys, groupIdx, kind);
  }
}

/** BlockRemoved objects a decoder keeps for reuse (a batch with more gets fresh ones past this). */
const REMOVED_POOL_MAX = 4096;

function metaSalt(v: unknown): string | null {
  const s = (v as { cache_salt?: unknown } | null)?.cache_salt;
  return typeof s === 'string' && s !== '' ? s : null;
}

// Token fast path tables: bytes consumed (0 = not a fixint/cc/cd/ce) and the right shift that
// extracts the value from the 4 bytes after the type byte.
const TOKEN_SIZE = new Uint8Array(256), TOKEN_SHIFT = new Uint8Array(256);
TOKEN_SIZE.fill(1, 0, 0x80);
TOKEN_SIZE[0xcc] = 2; TOKEN_SHIFT[0xcc] = 24;
TOKEN_SIZE[0xcd] = 3; TOKEN_SHIFT[0xcd] = 16;
TOKEN_SIZE[0xce] = 5;

function isArrayByte(t: number): boolean { return (t & 0xf0) === 0x90 || t === 0xdc || t === 0xdd; }
function isMapByte(t: number): boolean { return (t & 0xf0) === 0x80 || t === 0xde || t === 0xdf; }

function grow(a: Uint32Array, need: number, used: number): Uint32Array {
  const next = new Uint32Array(Math.max(need, a.length * 2));
  next.set(a.subarray(0, used));
  return next;
}

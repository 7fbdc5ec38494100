/**
 * The pending-selection cache (Dynamo `lib/kv-router/src/services/selection/pending.rs`): what a `/select` carrying a
 * `selection_id` chose, kept so that a later replay `/reservations` (no `worker_id`) books
 * exactly those inputs. Replica-local, bounded by TTL, entry count and an approximate byte budget.
 *
 * Layout: one `Map` whose iteration order is insertion order, so "oldest first" is a walk from
 * the front and a re-insert (delete + set) moves a key to the newest position. With a monotonic
 * clock that order is also age order, which lets the expiry sweep stop at the first live entry
 * (O(expired), not O(size), per insert).
 *
 * Isomorphic: no timers; time comes from the injected {@link Clock}. Expired entries are dropped
 * lazily (on insert, and on a peek that finds one).
 */
import type { Clock } from '../random.js';

/** Limits of the cache (defaults: `LIMITS.selectionCache*` = 120 s, 4096, 256 MiB). */
export interface PendingCacheOptions {
  clock: Clock;
  /** Time to live from insertion, seconds; `age > ttl` is gone, `age == ttl` still live. */
  ttlSecs: number;
  /** Entry-count cap. */
  maxEntries: number;
  /** Byte budget over {@link entryBytes}. */
  maxBytes: number;
}

/** The cached booking inputs of one `/select` with a `selection_id`. */
export interface PendingSelection {
  workerId: bigint;
  dpRank: number;
  /** Normalized tracking hashes (owned by the entry; see {@link PendingSelectionCache.insert}). */
  sequenceHashes: BigUint64Array;
  /** Local/routing hashes kept for approximate recording; null when not recorded (hash-only path). */
  blockHashes: BigUint64Array | null;
  islTokens: number;
  effectivePrefillTokens: number;
  /** The chosen rank's device-tier match in tokens (`overlap.gpu`), for the booking's hit-rate metric. */
  deviceOverlapTokens?: number;
  expectedOutputTokens?: number;
  /** The select-time decision, override included. */
  trackPrefillTokens: boolean;
  loraName?: string;
  sessionId?: string;
}

/** A live entry as {@link PendingSelectionCache.peek} returns it. */
export interface PendingHit { value: PendingSelection; generation: number }

interface Entry {
  readonly value: PendingSelection;
  readonly generation: number;
  readonly insertedAt: number;
  readonly bytes: number;
}

/** UTF-8 byte length without allocating (a lone surrogate counts 3, as TextEncoder's U+FFFD). */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { n += 4; i++; } else n += 3;
    } else n += 3;
  }
  return n;
}

/**
 * Dynamo's size estimate of one entry: `8·#blockHashes + 8·#sequenceHashes + len(id) + len(model)
 * + len(group) + len(lora)`, string lengths in UTF-8 bytes (Rust `str::len`). The session id is
 * not counted (the formula predates it).
 */
export function entryBytes(model: string, group: string, selectionId: string, value: PendingSelection): number {
  return 8 * (value.blockHashes?.length ?? 0) + 8 * value.sequenceHashes.length
    + utf8Length(selectionId) + utf8Length(model) + utf8Length(group) + utf8Length(value.loraName ?? '');
}

/**
 * Collision-free key: lengths prefix model and group, so `("a:b", "c")` and `("a", "b:c")` differ
 * whatever the ids contain. The id is last and needs no prefix.
 */
function keyOf(model: string, group: string, selectionId: string): string {
  return `${model.length}:${model}${group.length}:${group}${selectionId}`;
}

/** An array that views part of a larger buffer (wasm memory, a scratch area) is copied. */
function owned(a: BigUint64Array): BigUint64Array {
  return a.byteOffset === 0 && a.byteLength === a.buffer.byteLength ? a : a.slice();
}

/**
 * The hashes an entry keeps. A normalised prompt's block and sequence hashes are the two halves of
 * one buffer (one allocation instead of two, src/core/index/prompt.ts): that buffer holds exactly
 * the entry's hashes, so both are taken over; any other view is copied.
 */
function ownedHashes(seq: BigUint64Array, blocks: BigUint64Array | null): [BigUint64Array, BigUint64Array | null] {
  if (blocks !== null && blocks.buffer === seq.buffer && blocks.byteOffset === 0 && seq.byteOffset === blocks.byteLength
    && seq.byteOffset + seq.byteLength === seq.buffer.byteLength) return [seq, blocks];
  return [owned(seq), blocks === null ? null : owned(blocks)];
}

function check(name: string, v: number, integer: boolean): void {
  if (!(Number.isFinite(v) && v >= 0 && (!integer || Number.isInteger(v)))) {
    throw new RangeError(`pending cache ${name} must be a non-negative ${integer ? 'integer' : 'number'}, got ${v}`);
  }
}

/** The cache. Keys are `(model, group, selectionId)`; latest insert wins. */
export class PendingSelectionCache {
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly entries = new Map<string, Entry>();
  private totalBytes = 0;
  private nextGeneration = 1;

  constructor(opts: PendingCacheOptions) {
    check('ttlSecs', opts.ttlSecs, false);
    check('maxEntries', opts.maxEntries, true);
    check('maxBytes', opts.maxBytes, true);
    this.clock = opts.clock;
    this.ttlMs = opts.ttlSecs * 1000;
    this.maxEntries = opts.maxEntries;
    this.maxBytes = opts.maxBytes;
  }

  /**
   * Inserts (latest wins, new generation) and enforces the limits: expired entries are swept
   * oldest-first, then the oldest are evicted while over the count or byte budget. An entry
   * bigger than the whole byte budget evicts itself (it is not kept, and it does not flush the
   * others to make room it could never have); it still displaces the older entry of its key, so
   * a replay never books a superseded selection.
   *
   * The hash arrays are taken over, not copied, unless they view part of a larger buffer (a
   * prompt's two halves of one buffer count as whole); the caller must not mutate them afterwards. Returns the entry's generation.
   */
  insert(model: string, group: string, selectionId: string, value: PendingSelection): number {
    const now = this.clock.now();
    this.sweep(now);
    const key = keyOf(model, group, selectionId);
    this.drop(key);
    const generation = this.nextGeneration++;
    const [sequenceHashes, blockHashes] = ownedHashes(value.sequenceHashes, value.blockHashes);
    const stored: PendingSelection = { ...value, sequenceHashes, blockHashes };
    const bytes = entryBytes(model, group, selectionId, stored);
    if (bytes > this.maxBytes || this.maxEntries === 0) return generation;
    this.entries.set(key, { value: stored, generation, insertedAt: now, bytes });
    this.totalBytes += bytes;
    for (const [k, e] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.totalBytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.totalBytes -= e.bytes;
    }
    return generation;
  }

  /** The live entry and its generation, left in place; an expired one is dropped and missed. */
  peek(model: string, group: string, selectionId: string): PendingHit | undefined {
    const key = keyOf(model, group, selectionId);
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (this.clock.now() - e.insertedAt > this.ttlMs) { this.drop(key); return undefined; }
    return { value: e.value, generation: e.generation };
  }

  /**
   * Removes the entry iff its generation is still `generation` (after a successful replay; a
   * newer select for the id survives). Expiry is not checked: the booking already used it.
   */
  removeIfGeneration(model: string, group: string, selectionId: string, generation: number): boolean {
    const key = keyOf(model, group, selectionId);
    const e = this.entries.get(key);
    if (e === undefined || e.generation !== generation) return false;
    return this.drop(key);
  }

  /** Unconditional discard (the explicit `/reservations` form, affinity rejections). */
  discard(model: string, group: string, selectionId: string): boolean {
    return this.drop(keyOf(model, group, selectionId));
  }

  /** Entries held, including expired ones not yet swept. */
  size(): number { return this.entries.size; }

  /** Sum of {@link entryBytes} over the entries held. */
  bytes(): number { return this.totalBytes; }

  /** Drops expired entries from the oldest; stops at the first live one (insertion = age order). */
  private sweep(now: number): void {
    for (const [k, e] of this.entries) {
      if (now - e.insertedAt <= this.ttlMs) break;
      this.entries.delete(k);
      this.totalBytes -= e.bytes;
    }
  }

  private drop(key: string): boolean {
    const e = this.entries.get(key);
    if (e === undefined) return false;
    this.entries.delete(key);
    this.totalBytes -= e.bytes;
    return true;
  }
}

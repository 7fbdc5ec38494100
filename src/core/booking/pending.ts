/**
 * The pending-selection cache (Dynamo `lib/kv-router/src/services/selection/pending.rs`): what a `/select` carrying a
 * `selection_id` chose, kept so that a later replay `/reservations` (no `worker_id`) books
 * exactly those inputs. Replica-local, bounded by TTL, entry count and an approximate byte budget.
 *
 * Storage is an {@link ExpiringMap} (`expiring-map.ts`: insertion = age order, TTL sweep from the
 * oldest, eviction over the count or byte budget); this file adds the key, Dynamo's size formula,
 * the entries' generations and hash ownership.
 */
import type { Clock } from '../random.js';
import { ExpiringMap, utf8Length } from './expiring-map.js';

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

/** The cache. Keys are `(model, group, selectionId)`; latest insert wins. */
export class PendingSelectionCache {
  private readonly entries: ExpiringMap<Entry>;
  private nextGeneration = 1;

  constructor(opts: PendingCacheOptions) {
    this.entries = new ExpiringMap<Entry>(opts);
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
    const generation = this.nextGeneration++;
    const [sequenceHashes, blockHashes] = ownedHashes(value.sequenceHashes, value.blockHashes);
    const stored: PendingSelection = { ...value, sequenceHashes, blockHashes };
    this.entries.set(keyOf(model, group, selectionId), { value: stored, generation }, entryBytes(model, group, selectionId, stored));
    return generation;
  }

  /** The live entry and its generation, left in place; an expired one is dropped and missed. */
  peek(model: string, group: string, selectionId: string): PendingHit | undefined {
    const e = this.entries.get(keyOf(model, group, selectionId));
    return e === undefined ? undefined : { value: e.value, generation: e.generation };
  }

  /**
   * Removes the entry iff its generation is still `generation` (after a successful replay; a
   * newer select for the id survives). Expiry is not checked: the booking already used it.
   */
  removeIfGeneration(model: string, group: string, selectionId: string, generation: number): boolean {
    const key = keyOf(model, group, selectionId);
    const e = this.entries.peekAnyAge(key);
    if (e === undefined || e.generation !== generation) return false;
    return this.entries.delete(key);
  }

  /** Unconditional discard (the explicit `/reservations` form, affinity rejections). */
  discard(model: string, group: string, selectionId: string): boolean {
    return this.entries.delete(keyOf(model, group, selectionId));
  }

  /** Entries held, including expired ones not yet swept. */
  size(): number { return this.entries.size; }

  /** Sum of {@link entryBytes} over the entries held. */
  bytes(): number { return this.entries.bytes; }
}

/**
 * A string-keyed map bounded by age, entry count and a byte budget: what the pending-selection
 * cache (`pending.ts`) and the reservation index's record of why an id ended
 * (`reservations.ts`) both need, so memory stays bounded whatever clients send.
 *
 * Layout: a `Map` from key to entry, and the entries in insertion order in an array read from a
 * moving head (a FIFO). With a monotonic clock insertion order is age order, so the expiry sweep
 * and the eviction of the oldest pop from the head and stop at the first live entry: O(1)
 * amortized per insert. (Iterating a `Map` from its front after deleting there is not: V8 keeps
 * the deleted slots until the table is rebuilt, and every walk from the front steps over them,
 * which measured 5 µs per insert at 4,096 entries and 40 µs at 65,536; bench/RESULTS.md.) A
 * replaced or deleted entry is marked dead and dropped when it reaches the head; the array is
 * compacted when dead entries or the consumed head outnumber the live ones.
 *
 * Isomorphic: no timers; time comes from the injected {@link Clock}. Expired entries are dropped
 * lazily (on insert, and on a get that finds one).
 */
import type { Clock } from '../random.js';

/** Limits of an {@link ExpiringMap}. */
export interface ExpiringMapOptions {
  clock: Clock;
  /** Time to live from insertion, seconds; `age > ttl` is gone, `age == ttl` still live. */
  ttlSecs: number;
  /** Entry-count cap. */
  maxEntries: number;
  /** Budget over the byte sizes given to {@link ExpiringMap.set}. */
  maxBytes: number;
}

interface Entry<V> { readonly key: string; readonly value: V; readonly insertedAt: number; readonly bytes: number; live: boolean }

/** UTF-8 byte length without allocating (a lone surrogate counts 3, as TextEncoder's U+FFFD). */
export function utf8Length(s: string): number {
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

function check(name: string, v: number, integer: boolean): void {
  if (!(Number.isFinite(v) && v >= 0 && (!integer || Number.isInteger(v)))) {
    throw new RangeError(`${name} must be a non-negative ${integer ? 'integer' : 'number'}, got ${v}`);
  }
}

/** The map. A limit that is not a non-negative number (count and bytes: integer) is a RangeError. */
export class ExpiringMap<V> {
  private readonly entries = new Map<string, Entry<V>>();
  /** Every entry not yet popped, oldest first from `head` (dead ones included). */
  private order: (Entry<V> | undefined)[] = [];
  private head = 0;
  private totalBytes = 0;
  /** Entries dropped by the count or byte limit while still within their age (a sign the limits are too small). */
  evictions = 0;

  constructor(private readonly o: ExpiringMapOptions) {
    check('ttlSecs', o.ttlSecs, false);
    check('maxEntries', o.maxEntries, true);
    check('maxBytes', o.maxBytes, true);
  }

  /**
   * Inserts `value` as the newest entry (replacing the key's older one) and enforces the limits:
   * expired entries are swept oldest-first, then the oldest are evicted while over the count or
   * byte budget. An entry bigger than the whole byte budget is not kept (and does not flush the
   * others to make room it could never have); it still displaces the older entry of its key.
   * Returns whether the entry was kept.
   */
  set(key: string, value: V, bytes: number): boolean {
    const { maxEntries, maxBytes } = this.o, now = this.o.clock.now();
    this.delete(key);
    // expired entries, oldest first (dead ones on the way are dropped too)
    for (let e = this.oldest(); e !== undefined && this.expired(e, now); e = this.oldest()) this.pop();
    if (bytes > maxBytes || maxEntries === 0) return false;
    const e: Entry<V> = { key, value, insertedAt: now, bytes, live: true };
    this.entries.set(key, e);
    this.order.push(e);
    this.totalBytes += bytes;
    // over a limit, the map holds a live entry older than this one (a single entry fits both)
    while ((this.entries.size > maxEntries || this.totalBytes > maxBytes) && this.oldest() !== undefined) { this.pop(); this.evictions++; }
    this.compact();
    return true;
  }

  /** The live value of `key`; an expired one is dropped and missed. */
  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (this.expired(e, this.o.clock.now())) { this.delete(key); return undefined; }
    return e.value;
  }

  /** The value of `key` whatever its age (expired entries not yet swept included). */
  peekAnyAge(key: string): V | undefined { return this.entries.get(key)?.value; }

  /** Removes `key`; whether it was held. */
  delete(key: string): boolean {
    const e = this.entries.get(key);
    if (e === undefined) return false;
    this.entries.delete(key);
    this.totalBytes -= e.bytes;
    e.live = false;
    return true;
  }

  /** Entries held, including expired ones not yet swept. */
  get size(): number { return this.entries.size; }

  /** Sum of the byte sizes of the entries held. */
  get bytes(): number { return this.totalBytes; }

  /** `age > ttl` is gone, `age == ttl` still live. */
  private expired(e: Entry<V>, now: number): boolean { return now - e.insertedAt > this.o.ttlSecs * 1000; }

  /** The oldest live entry, after dropping the dead ones before it from the head. */
  private oldest(): Entry<V> | undefined {
    while (this.head < this.order.length) {
      const e = this.order[this.head] as Entry<V>;
      if (e.live) return e;
      this.order[this.head++] = undefined;
    }
    return undefined;
  }

  /** Removes the entry at the head (the oldest live one, after {@link oldest}). */
  private pop(): void {
    const e = this.order[this.head] as Entry<V>;
    this.entries.delete(e.key);
    this.totalBytes -= e.bytes;
    e.live = false;
    this.order[this.head++] = undefined;
  }

  /** Rebuilds the FIFO of the live entries when the consumed head and dead entries outnumber them (amortized O(1)). */
  private compact(): void {
    const held = this.order.length - this.head;
    if (held <= 2 * this.entries.size + 64 && this.head <= held + 64) return;
    this.order = this.order.slice(this.head).filter((e) => e!.live);
    this.head = 0;
  }
}

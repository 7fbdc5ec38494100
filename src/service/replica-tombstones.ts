/**
 * Tombstones of the replica mesh: the ids freed lately (here, by a peer, or found gone at their
 * owner), kept for a bounded time and number ({@link ExpiringMap}: age, count and bytes), so that
 * - an admission that arrives after its own free (the free overtook it, from another peer) is not
 *   applied: the tombstone of an id this replica never held (`known` false) refuses it;
 * - a peer that still holds a freed booking (it missed the free) is told again: anti-entropy
 *   compares the booking's age with the tombstone's and sends the free when the free came later.
 * An admission of an id freed here earlier (`known`) is a new booking of a reused id and is
 * applied. A tombstone evicted by the count or byte limit before its age is counted: a free
 * missed for longer than tombstones last can no longer be repaired (the owner's authority and the
 * expiry sweep still end the booking).
 */
import { ExpiringMap, utf8Length } from '../core/booking/expiring-map.js';
import type { Clock } from '../core/random.js';

/** A freed id: when it was freed here (clock ms) and whether this replica held it then. */
export interface Tombstone { readonly at: number; readonly known: boolean }

export interface TombstoneLimits { ttlSecs: number; maxEntries: number; maxBytes: number }

/** How far a booking's age and its tombstone's may disagree and still count as "admitted before the free" (clocks never compared; transit only). */
export const TOMBSTONE_SLACK_MS = 1000;

export class Tombstones {
  private readonly map: ExpiringMap<Tombstone>;

  constructor(private readonly clock: Clock, limits: TombstoneLimits) {
    this.map = new ExpiringMap<Tombstone>({ clock, ...limits });
  }

  /** Remembers that `id` was freed now; a known free is never downgraded by a later unknown one. */
  record(id: string, known: boolean): void {
    const prev = this.map.get(id);
    this.map.set(id, { at: this.clock.now(), known: known || (prev?.known ?? false) }, utf8Length(id) + 64);
  }

  get(id: string): Tombstone | undefined { return this.map.get(id); }

  delete(id: string): void { this.map.delete(id); }

  /**
   * Whether a booking `ageMs` old (at its holder, when it was listed) was admitted before `id`
   * was freed here: then it is the freed booking, still held somewhere.
   */
  freedAfter(id: string, ageMs: number): boolean {
    const t = this.map.get(id);
    return t !== undefined && ageMs + TOMBSTONE_SLACK_MS >= this.clock.now() - t.at;
  }

  get size(): number { return this.map.size; }
  get bytes(): number { return this.map.bytes; }
  /** Tombstones dropped by the count or byte limit before their age. */
  get evictions(): number { return this.map.evictions; }
}

/**
 * The process-wide reservation index (Dynamo `lib/kv-router/src/services/selection/core/reservations.rs`): one booking-id namespace across every partition.
 * An id is first *claimed* (in flight: it blocks other bookings of the id with 409 and is
 * invisible to lifecycle calls, which answer 404), then *committed* to a booking row or
 * *released*. Bookings mirrored from replica peers are rows too (`mirrored: true`), so lifecycle
 * calls resolve ids booked on another replica.
 *
 * The index only stores rows; the scheduler booking itself lives in the partition's load
 * tracker, and the periodic {@link ReservationIndex.sweep} drops rows whose booking vanished.
 * Synchronous and single-threaded: a `lookup` followed by a `mirror`/`remove` cannot interleave
 * with another call.
 *
 * How a removed booking ended (freed, by a peer too; expired; released with its worker) is kept
 * per id for a while, bounded by age, count and bytes ({@link ExpiringMap}), so a later lifecycle
 * call on the id answers why instead of a bare `not found` ({@link ReservationIndex.notFound}).
 */
import { duplicateSelection, reservationNotFound, type ReservationEnd, type SelectionError } from '../errors.js';
import type { Clock } from '../random.js';
import { ExpiringMap, utf8Length } from './expiring-map.js';

/** A booking row (local or mirrored). `lease` is the session-affinity lease, local rows only. */
export interface ReservationRow<L = unknown> {
  readonly partitionKey: string;
  readonly workerId: bigint;
  readonly dpRank: number;
  /** True for a row mirrored from a replica peer's admission. */
  readonly mirrored: boolean;
  /** Mirrored rows: the `router_id` of the replica that admitted the booking (its owner, for anti-entropy). */
  readonly owner?: bigint;
  readonly lease?: L;
}

/** What the index holds for an id. */
export type ReservationState<L = unknown> =
  | { readonly kind: 'claim'; readonly partitionKey: string }
  | ({ readonly kind: 'booked' } & ReservationRow<L>);

/**
 * The handle of an in-flight claim, returned by {@link ReservationIndex.claim}. Compared by
 * identity: a token whose claim was committed or released is stale.
 */
export interface ClaimToken {
  readonly id: string;
  readonly partitionKey: string;
}

/** What {@link ReservationIndex.observe} is told: a booking row's id, the row before and after (undefined: none). */
export type RowObserver<L = unknown> = (id: string, before: ReservationRow<L> | undefined, after: ReservationRow<L> | undefined) => void;

/** A row as {@link ReservationIndex.sweep} returns it. */
export interface SweptReservation<L = unknown> { id: string; row: ReservationRow<L> }

/** Limits of the record of ended bookings (defaults: `LIMITS.endedReservations*`). */
export interface EndedOptions { clock: Clock; ttlSecs: number; maxEntries: number; maxBytes: number }

/** Bytes an ended id counts against its budget: the id plus the Map entry and record around it. */
const endedBytes = (id: string): number => utf8Length(id) + 64;

type Slot<L> = { kind: 'claim'; token: ClaimToken } | { kind: 'booked'; row: ReservationRow<L> };

/** The index; `L` is the lease type the host stores with local bookings. */
export class ReservationIndex<L = unknown> {
  private readonly slots = new Map<string, Slot<L>>();
  /** How removed bookings ended, by id (null: not remembered). */
  private readonly ended: ExpiringMap<ReservationEnd> | null;
  private observer: RowObserver<L> | null = null;

  /** With `ended`, how removed bookings ended is remembered within those limits. */
  constructor(ended?: EndedOptions) {
    this.ended = ended === undefined ? null : new ExpiringMap<ReservationEnd>(ended);
  }

  /**
   * Claims `id` for a booking in `partitionKey`. Throws 409 {@link duplicateSelection} when the id
   * is claimed or booked (locally or mirrored) in any partition.
   */
  claim(id: string, partitionKey: string): ClaimToken {
    if (this.slots.has(id)) throw duplicateSelection(id);
    const token: ClaimToken = Object.freeze({ id, partitionKey });
    this.slots.set(id, { kind: 'claim', token });
    return token;
  }

  /** Turns a claim into a local booking row. A stale token is a programming error and throws. */
  commit(token: ClaimToken, workerId: bigint, dpRank: number, lease?: L): void {
    const s = this.slots.get(token.id);
    if (s === undefined || s.kind !== 'claim' || s.token !== token) {
      throw new Error(`reservation claim for ${token.id} is no longer held`);
    }
    const row: ReservationRow<L> = lease === undefined
      ? { partitionKey: token.partitionKey, workerId, dpRank, mirrored: false }
      : { partitionKey: token.partitionKey, workerId, dpRank, mirrored: false, lease };
    this.slots.set(token.id, { kind: 'booked', row });
    this.observer?.(token.id, undefined, row);
  }

  /** Drops a claim that did not book (failure path). No-op for a stale token. */
  release(token: ClaimToken): void {
    const s = this.slots.get(token.id);
    if (s !== undefined && s.kind === 'claim' && s.token === token) this.slots.delete(token.id);
  }

  /** The booking row for lifecycle calls; in-flight claims and unknown ids are undefined (404). */
  lookup(id: string): ReservationRow<L> | undefined {
    const s = this.slots.get(id);
    return s !== undefined && s.kind === 'booked' ? s.row : undefined;
  }

  /** The full state of an id, claims included (diagnostics, tests). */
  state(id: string): ReservationState<L> | undefined {
    const s = this.slots.get(id);
    if (s === undefined) return undefined;
    return s.kind === 'claim' ? { kind: 'claim', partitionKey: s.token.partitionKey } : { kind: 'booked', ...s.row };
  }

  /**
   * Removes a booking row (free, peer `Free`, worker removal, expiry) and remembers `end`. An
   * in-flight claim is left alone and answers undefined: a DELETE racing a queued booking is a
   * 404 and does not cancel it. The caller releases the returned row's lease.
   */
  remove(id: string, end?: ReservationEnd): ReservationRow<L> | undefined {
    const s = this.slots.get(id);
    if (s === undefined || s.kind !== 'booked') return undefined;
    this.slots.delete(id);
    this.observer?.(id, s.row, undefined);
    if (end !== undefined) this.ended?.set(id, end, endedBytes(id));
    return s.row;
  }

  /** How the booking of `id` ended, while remembered and while the id is not claimed or booked again. */
  endOf(id: string): ReservationEnd | undefined {
    return this.slots.has(id) ? undefined : this.ended?.get(id);
  }

  /** The 404 of a lifecycle call on `id`: how its booking ended when remembered, else `not found`. */
  notFound(id: string): SelectionError { return reservationNotFound(id, this.endOf(id)); }

  /**
   * Mirrors a peer's admission, owned by the replica `owner` (its `router_id`). Inserts a
   * mirrored row, or replaces a stale row (local or mirrored) of the same partition; refuses
   * (false) an in-flight claim or a row of another partition. A replaced local row's lease is
   * dropped: callers that hold leases `lookup` first.
   */
  mirror(id: string, partitionKey: string, workerId: bigint, dpRank: number, owner?: bigint): boolean {
    const s = this.slots.get(id);
    if (s !== undefined && (s.kind === 'claim' || s.row.partitionKey !== partitionKey)) return false;
    const row: ReservationRow<L> = owner === undefined ? { partitionKey, workerId, dpRank, mirrored: true }
      : { partitionKey, workerId, dpRank, mirrored: true, owner };
    this.slots.set(id, { kind: 'booked', row });
    this.observer?.(id, s?.kind === 'booked' ? s.row : undefined, row);
    return true;
  }

  /** Every booking row (local and mirrored), in no particular order; claims are skipped. */
  *bookedRows(): IterableIterator<[string, ReservationRow<L>]> {
    for (const [id, s] of this.slots) if (s.kind === 'booked') yield [id, s.row];
  }

  /**
   * Calls `fn` after every change of a booking row (a commit, mirror, removal or sweep) with the
   * row before and after (undefined: none), so a summary of the rows (replica anti-entropy's
   * digest) follows them at O(1) per change. One observer; a later call replaces it.
   */
  observe(fn: RowObserver<L> | null): void { this.observer = fn; }

  /**
   * Ids of the booking rows (local and mirrored, all partitions) on `workerId`, on one rank when
   * `dpRank` is given. A linear scan: it runs on worker deletes and rank removals, which are rare.
   */
  idsOfWorker(workerId: bigint, dpRank?: number): string[] {
    const out: string[] = [];
    for (const [id, s] of this.slots) {
      if (s.kind === 'booked' && s.row.workerId === workerId && (dpRank === undefined || s.row.dpRank === dpRank)) out.push(id);
    }
    return out;
  }

  /**
   * Drops the booking rows for which `alive(id, row)` is false (their scheduler booking vanished,
   * e.g. force-expired) and returns them, so the caller can release their session leases.
   * Claims are never swept: they have no booking yet.
   */
  sweep(alive: (id: string, row: ReservationRow<L>) => boolean): SweptReservation<L>[] {
    const dropped: SweptReservation<L>[] = [];
    for (const [id, s] of this.slots) {
      if (s.kind === 'booked' && !alive(id, s.row)) {
        this.slots.delete(id);
        dropped.push({ id, row: s.row });
        this.observer?.(id, s.row, undefined);
      }
    }
    return dropped;
  }

  /** Ids held: bookings and in-flight claims. */
  size(): number { return this.slots.size; }
}

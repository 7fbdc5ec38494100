/**
 * The digest of what a replica holds, for anti-entropy: the booking rows grouped by (partition,
 * owner), each group a fixed array of 64 buckets; a bucket is the count of its rows and the XOR
 * of their 64-bit hashes (id, worker and rank), so a digest is a few numbers per bucket however
 * many bookings there are, and two replicas that hold the same rows compute the same numbers.
 *
 * A row's bucket comes from its id alone (a booking moved to another worker stays in its bucket).
 * A digest sends a group with `n` buckets (a power of two up to 64, about 32 rows per bucket):
 * bucket `j` of `n` is the union of the 64-bucket slots `j, j+n, j+2n, ...`, so a receiver folds
 * its own 64 slots the same way. A mismatching bucket is then listed id by id, ~32 ids, not the group.
 *
 * Kept up to date as booking rows change (the reservation index's observer): a change costs one
 * hash of its id, a digest costs its groups' buckets, whatever the number of bookings; nothing is
 * computed while nothing changes. (Recomputed from every row instead, a digest took 2.75 ms at
 * 10,000 bookings, nine times a second over three replicas under load: bench/RESULTS.md.)
 */
import type { ReservationRow, RowObserver } from '../core/booking/reservations.js';

export const DIGEST_SLOTS = 64;
/** Rows a digest bucket aims at: more buckets make a mismatch cheaper to list, and the digest longer. */
const ROWS_PER_BUCKET = 32;

/** One (partition, owner) group: per slot, the row count and the XOR of the rows' hash words. */
export class GroupSummary {
  readonly count = new Int32Array(DIGEST_SLOTS);
  readonly lo = new Int32Array(DIGEST_SLOTS);
  readonly hi = new Int32Array(DIGEST_SLOTS);
  total = 0;
  constructor(readonly partitionKey: string, readonly owner: bigint) {}

  /** Adds a row (`sign` 1) or takes it away (-1): XOR undoes itself. */
  add(id: string, workerId: bigint, dpRank: number, sign: 1 | -1 = 1): void {
    const s = slotOf(id);
    const [lo, hi] = rowHash(id, workerId, dpRank);
    this.count[s] += sign;
    this.lo[s] ^= lo;
    this.hi[s] ^= hi;
    this.total += sign;
  }

  /** The `n` buckets as a digest sends them: [index, count, lo, hi] per non-empty bucket. */
  folded(n: number): number[] {
    const out: number[] = [];
    for (let j = 0; j < n; j++) {
      let c = 0, lo = 0, hi = 0;
      for (let s = j; s < DIGEST_SLOTS; s += n) { c += this.count[s]; lo ^= this.lo[s]; hi ^= this.hi[s]; }
      if (c > 0) out.push(j, c, lo >>> 0, hi >>> 0);
    }
    return out;
  }
}

/** The bucket count a digest uses for a group of `rows`: a power of two, 1 to 64. */
export function bucketsFor(rows: number): number {
  let n = 1;
  while (n < DIGEST_SLOTS && n * ROWS_PER_BUCKET < rows) n *= 2;
  return n;
}

/** The buckets (of `n`) where `mine` differs from `theirs` (both as {@link GroupSummary.folded} writes them). */
export function diffBuckets(mine: readonly number[], theirs: readonly number[]): number[] {
  const key = (b: readonly number[], i: number) => `${b[i + 1]}:${b[i + 2]}:${b[i + 3]}`;
  const a = new Map<number, string>(), out = new Set<number>();
  for (let i = 0; i < mine.length; i += 4) a.set(mine[i], key(mine, i));
  for (let i = 0; i < theirs.length; i += 4) {
    if (a.get(theirs[i]) !== key(theirs, i)) out.add(theirs[i]);
    a.delete(theirs[i]);
  }
  for (const j of a.keys()) out.add(j);
  return [...out].sort((x, y) => x - y);
}


/** The slot (0-63) of an id: the top bits of a 32-bit hash of its UTF-16 code units. */
export function slotOf(id: string): number {
  let h = 0x9747b28c;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x5bd1e995);
  return fmix(h) >>> 26;
}

/** Two 32-bit words hashing a row (id, worker, rank): FNV-1a and a murmur-style mix with a final avalanche. */
function rowHash(id: string, workerId: bigint, dpRank: number): [number, number] {
  let a = 0x811c9dc5, b = 0x1b873593 ^ dpRank;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0xcc9e2d51);
    b = (b << 13) | (b >>> 19);
  }
  const wl = Number(workerId & 0xffffffffn), wh = Number(workerId >> 32n);
  a = Math.imul(a ^ wl, 0x01000193) ^ Math.imul(wh, 0x85ebca6b);
  b = Math.imul(b ^ wh, 0xcc9e2d51) ^ Math.imul(wl ^ dpRank, 0xc2b2ae35);
  return [fmix(a), fmix(b ^ a)];
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The key of a (partition, owner) group. */
export const groupKey = (partitionKey: string, owner: bigint): string => `${partitionKey}\u0000${owner}`;

/** What a digest book follows: the reservation index's rows, and this replica's id (the owner of local rows). */
export interface DigestSource {
  readonly replicaId: bigint;
  readonly reservations: { observe(fn: RowObserver | null): void; bookedRows(): Iterable<[string, ReservationRow]> };
}

/** The groups of everything a replica holds, following every change of its booking rows. */
export class DigestBook {
  private readonly groups = new Map<string, GroupSummary>();
  /** Rows hashed so far (tests, the bench: one per change, none while nothing changes). */
  hashed = 0;

  constructor(private readonly src: DigestSource) {
    for (const [id, row] of src.reservations.bookedRows()) this.apply(id, row, 1);
    src.reservations.observe((id, before, after) => {
      if (before) this.apply(id, before, -1);
      if (after) this.apply(id, after, 1);
    });
  }

  /** Every non-empty group, by {@link groupKey}. */
  current(): ReadonlyMap<string, GroupSummary> { return this.groups; }

  /** Stops following the rows. */
  detach(): void { this.src.reservations.observe(null); }

  private apply(id: string, row: ReservationRow, sign: 1 | -1): void {
    const owner = row.mirrored ? row.owner ?? 0n : this.src.replicaId;
    const k = groupKey(row.partitionKey, owner);
    let g = this.groups.get(k);
    if (g === undefined) { g = new GroupSummary(row.partitionKey, owner); this.groups.set(k, g); }
    g.add(id, row.workerId, row.dpRank, sign);
    this.hashed++;
    if (g.total === 0) this.groups.delete(k);
  }
}

/**
 * Anti-entropy of the replica mesh: replicas agree on the bookings they hold whatever the mesh
 * lost (a cut network, a restart, a full queue), within a digest interval or two.
 *
 * Ownership: a booking is owned by the replica that admitted it (its `router_id`; a repair names
 * the owner explicitly). Every `--replica-sync-digest-ms` each replica publishes a digest of all
 * it holds, grouped by (partition, owner) (replica-digest.ts). A receiver compares each group with
 * its own, in stream order (after every event the sender published before the digest), and asks
 * the sender for the ids of the buckets that differ (`want` -> `list`). Reconciling a list:
 * - an id the receiver holds and the list lacks is dropped when the sender is its owner: the
 *   owner no longer holds it (from a non-owner the difference is the non-owner's to repair);
 * - a group of the sender's own that its digest round did not mention at all is dropped whole;
 * - an id the list has and the receiver lacks is fetched (`fetch` -> `bookings`) and booked with
 *   its owner and age, unless the receiver freed it after it was admitted (a tombstone): then
 *   the free is sent again (`free`), since the sender missed it;
 * - a prefill completion the receiver missed is applied.
 * A difference that no repair can settle (a worker not registered here) is remembered per bucket
 * and not asked about again until either side's bucket changes. Lifecycle events from peers pass
 * the tombstones first (an admission whose free came first is refused); frees leave tombstones.
 */
import type { Partition } from '../core/catalog/partition.js';
import type { LifecycleEvent } from '../core/wire/events.js';
import type { ReservationRow } from '../core/booking/reservations.js';
import { DigestBook, bucketsFor, diffBuckets, groupKey } from './replica-digest.js';
import type { DigestGroup, ListEntry, RepairBody, RepairMessage } from './replica-repair-wire.js';
import { CHUNK, bookingsReply, bucketIndex, listReply, ref, rowsOf, type RepairHost } from './replica-repair-replies.js';
import type { Tombstones } from './replica-tombstones.js';
import type { PeerViews } from './replica-views.js';
import type { ReplicaDrops } from './replica-drops.js';

export type { RepairHost } from './replica-repair-replies.js';

/** Anti-entropy counters (metrics, tests, the bench). */
export interface RepairStats {
  digestsSent: number; digestMatches: number; digestMismatches: number;
  /** Bookings booked from a peer's repair, dropped because their owner no longer holds them, frees sent again, prefill completions applied. */
  added: number; dropped: number; freesResent: number; prefillsCompleted: number;
  /** Bytes of anti-entropy messages, by direction. */
  bytesSent: number; bytesReceived: number;
  /** Booking rows hashed into the digest (one per change of a row; none while nothing changes). */
  rowsHashed: number;
}


interface Pending {
  to: bigint; at: number; part: Partition;
  want?: { part: Partition; owner: bigint; n: number; buckets: number[]; signatures: Map<number, string> };
  entries: ListEntry[]; gap: boolean;
}

export class AntiEntropy {
  private readonly counts: Omit<RepairStats, 'rowsHashed'> = {
    digestsSent: 0, digestMatches: 0, digestMismatches: 0, added: 0, dropped: 0, freesResent: 0, prefillsCompleted: 0, bytesSent: 0, bytesReceived: 0,
  };
  readonly book: DigestBook;
  /** Called when a digest arrives from a peer not heard lately (the host publishes its own digest soon). */
  onPeerHeard: (() => void) | null = null;
  private round = 0;
  private nextReq = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly fetching = new Map<string, number>();
  /** Differences no repair settles: `sender|group|n|bucket` -> the two buckets' signature. */
  private readonly settled = new Map<string, string>();

  constructor(private readonly host: RepairHost, private readonly views: PeerViews, readonly tombstones: Tombstones,
    private readonly drops: ReplicaDrops, private readonly send: (m: RepairBody) => void, private readonly intervalMs: () => number) {
    this.book = new DigestBook(host);
  }

  get stats(): RepairStats { return { ...this.counts, rowsHashed: this.book.hashed }; }

  /** Counts the bytes of an anti-entropy message sent or received. */
  countBytes(direction: 'sent' | 'received', n: number): void {
    if (direction === 'sent') this.counts.bytesSent += n; else this.counts.bytesReceived += n;
  }

  private get me(): bigint { return this.host.replicaId; }
  private now(): number { return this.host.clock.now(); }

  // ---- live lifecycle events and local frees --------------------------------------------------

  /** A peer's lifecycle event (owner: its publisher), through the tombstones. */
  applyLifecycle(e: LifecycleEvent, from: bigint): boolean {
    if (e.kind === 'add') {
      const t = this.tombstones.get(e.requestId);
      if (t && !t.known) { this.drops.received('tombstoned'); return false; }
      if (t) this.tombstones.delete(e.requestId); // an id freed here before, booked again
    }
    const outcome = this.host.replicaEventOutcome(e, from);
    if (e.kind === 'free' && (outcome === 'applied' || outcome === 'unknown_booking')) {
      this.tombstones.record(e.requestId, outcome === 'applied');
      return true;
    }
    if (outcome !== 'applied') { this.drops.received(outcome); return false; }
    return true;
  }

  /**
   * A worker was registered or changed here: differences set aside as unsettleable (a peer's
   * bookings on a worker not registered here) are asked about again at the next digest, and until
   * the mesh has formed every peer's first exchange starts again.
   */
  workersChanged(): void {
    this.settled.clear();
    this.views.resync();
  }

  /** This replica freed a booking it held (published as a Free). */
  freedHere(id: string): void { this.tombstones.record(id, true); }

  /** A DELETE here named an id this replica does not hold: remember it and tell the peers. */
  unknownFreed(id: string): void {
    this.tombstones.record(id, false);
    this.send({ kind: 'free', ids: [id] });
  }

  // ---- digests ------------------------------------------------------------------------------

  /** Publishes this replica's digest (one round, in chunks of groups). */
  publishDigest(sent: { lifecycle: number; affinity: number }): void {
    const parts = this.partsByKey();
    const groups: DigestGroup[] = [];
    for (const g of this.book.current().values()) {
      const p = parts.get(g.partitionKey);
      if (!p) continue;
      const n = bucketsFor(g.total);
      groups.push({ modelName: p.modelName, routingGroup: p.routingGroup, blockSize: p.blockSize, owner: g.owner, n, buckets: g.folded(n) });
    }
    const round = this.round++, hears = this.views.heard();
    for (let i = 0; i === 0 || i < groups.length; i += CHUNK.groups) {
      const final = i + CHUNK.groups >= groups.length;
      this.send({ kind: 'digest', round, final, sentLifecycle: sent.lifecycle, sentAffinity: sent.affinity, hears, groups: groups.slice(i, i + CHUNK.groups) });
    }
    this.counts.digestsSent++;
    this.expire();
  }

  /** A peer's repair message, in its stream order; `gap`: one of its repair messages before it went missing. */
  receive(m: RepairMessage, gap: boolean): void {
    const v = this.views.get(m.from);
    if (gap) {
      v.round.gap = true;
      for (const p of this.pending.values()) if (p.to === m.from) p.gap = true;
    }
    switch (m.kind) {
      case 'digest': return this.onDigest(m);
      case 'want': if (m.to === this.me) for (const r of listReply(this.host, m)) this.send(r); return;
      case 'list': if (m.to === this.me) this.onList(m); return;
      case 'fetch': if (m.to === this.me) for (const r of bookingsReply(this.host, m)) this.send(r); return;
      case 'bookings': if (m.to === this.me) this.onBookings(m); return;
      case 'free': { const parts = this.partsByKey(); for (const id of m.ids) this.onFree(id, parts); return; }
    }
  }

  private onDigest(m: Extract<RepairMessage, { kind: 'digest' }>): void {
    const v = this.views.get(m.from);
    if (m.round !== v.round.n) v.round = { n: m.round, gap: false, mentioned: new Set(), mismatch: false };
    v.hears = new Set(m.hears);
    // a peer that does not hear this replica yet (it has not subscribed) would never get our requests
    const ask = v.hears.has(this.me);
    const mine = this.book.current();
    for (const g of m.groups) {
      const part = this.host.partition(g.modelName, g.routingGroup);
      if (!part || part.blockSize !== g.blockSize) continue;
      const gk = groupKey(part.key, g.owner);
      if (g.owner === m.from) v.round.mentioned.add(gk);
      const my = mine.get(gk)?.folded(g.n) ?? [];
      const signatures = new Map<number, string>();
      const diff = diffBuckets(my, g.buckets).filter((b) => {
        const sig = `${bucketSig(my, b)}/${bucketSig(g.buckets, b)}`;
        signatures.set(b, sig);
        return this.settled.get(`${m.from}|${gk}|${g.n}|${b}`) !== sig;
      });
      if (diff.length === 0) continue;
      v.round.mismatch = true;
      if (ask) this.want(m.from, part, g.owner, g.n, diff, signatures);
    }
    if (!m.final) return;
    const returning = v.lastDigestAt < this.now() - 3 * this.intervalMs();
    v.lastDigestAt = this.now();
    if (returning) this.onPeerHeard?.(); // a new or returning peer: it hears from us at once, not an interval later
    if (!v.round.gap) {
      // the sender's own groups it did not mention: it holds none of them any more
      const parts = this.partsByKey();
      for (const [gk, g] of mine) {
        if (g.owner === m.from && !v.round.mentioned.has(gk)) for (const [id] of this.rowsOf(g.partitionKey, g.owner)) this.dropOwnerless(id, parts);
      }
    }
    if (v.round.mismatch) this.counts.digestMismatches++; else this.counts.digestMatches++;
    this.checkSynced(m.from);
  }

  /**
   * The first exchange with a peer is done once its digest was compared and every request it
   * caused is answered (its digest matched, or a repair was reconciled): `/ready` waits for it.
   */
  private checkSynced(from: bigint): void {
    const v = this.views.get(from);
    if (!v.synced && Number.isFinite(v.lastDigestAt) && !this.awaiting(from) && (!v.round.mismatch || v.repaired > 0)) v.synced = true;
  }

  private want(to: bigint, part: Partition, owner: bigint, n: number, buckets: number[], signatures: Map<number, string>): void {
    const asked = new Set<number>();
    for (const p of this.pending.values()) {
      if (p.to === to && p.want && p.want.part === part && p.want.owner === owner && p.want.n === n) for (const b of p.want.buckets) asked.add(b);
    }
    const fresh = buckets.filter((b) => !asked.has(b));
    if (fresh.length === 0) return;
    const req = this.nextReq++;
    this.pending.set(req, { to, at: this.now(), part, want: { part, owner, n, buckets: fresh, signatures }, entries: [], gap: false });
    this.send({ kind: 'want', to, req, part: ref(part), owner, n, buckets: fresh });
  }

  private onList(m: Extract<RepairMessage, { kind: 'list' }>): void {
    const p = this.pending.get(m.req);
    if (!p || p.to !== m.from || !p.want) return;
    p.entries.push(...m.entries);
    // a list longer than this replica could ever hold is no honest answer: drop the request
    if (p.entries.length > this.host.limits.maxBookings) { this.pending.delete(m.req); return; }
    if (!m.done) return;
    this.pending.delete(m.req);
    if (p.gap) return; // a chunk went missing: the next digest asks again
    this.views.get(m.from).repaired++;
    this.reconcile(m.from, p.want, p.entries);
    this.checkSynced(m.from);
  }

  private reconcile(from: bigint, w: NonNullable<Pending['want']>, entries: ListEntry[]): void {
    const { part, owner, n } = w;
    const buckets = new Set(w.buckets), mask = n - 1;
    const theirs = new Map(entries.map((e) => [e.id, e]));
    let acted = false;
    const parts = this.partsByKey();
    for (const [id] of this.rowsOf(part.key, owner)) {
      if (!buckets.has(bucketIndex(id, mask))) continue;
      const e = theirs.get(id);
      if (e === undefined) {
        if (from === owner) { this.dropOwnerless(id, parts); acted = true; }
        continue;
      }
      theirs.delete(id);
      if (e.prefillDone && part.loads.prefillPending(id)) {
        const row = this.host.reservations.lookup(id)!;
        this.host.replicaEventOutcome({ ...bookingRef(part, id, row), kind: 'prefill_complete' });
        this.counts.prefillsCompleted++;
        acted = true;
      }
    }
    const fetch: string[] = [], free: string[] = [];
    for (const e of theirs.values()) {
      if (this.host.reservations.state(e.id) !== undefined || !part.isSchedulable(e.workerId, e.dpRank)) continue;
      if (this.tombstones.freedAfter(e.id, e.ageMs)) free.push(e.id);
      else if (!this.fetching.has(e.id)) fetch.push(e.id);
    }
    for (let i = 0; i < free.length; i += CHUNK.ids) this.send({ kind: 'free', ids: free.slice(i, i + CHUNK.ids) });
    this.counts.freesResent += free.length;
    for (let i = 0; i < fetch.length; i += CHUNK.ids) {
      const ids = fetch.slice(i, i + CHUNK.ids), req = this.nextReq++;
      for (const id of ids) this.fetching.set(id, this.now());
      this.pending.set(req, { to: from, at: this.now(), part, entries: [], gap: false });
      this.send({ kind: 'fetch', to: from, req, part: ref(part), ids });
    }
    if (acted || free.length > 0 || fetch.length > 0) return;
    // nothing to do about it (e.g. a worker not registered here): do not ask again while both buckets stay as they are
    for (const b of w.buckets) {
      const sig = w.signatures.get(b);
      if (sig !== undefined) this.settled.set(`${from}|${groupKey(part.key, owner)}|${n}|${b}`, sig);
    }
  }

  private onBookings(m: Extract<RepairMessage, { kind: 'bookings' }>): void {
    const p = this.pending.get(m.req);
    if (!p || p.to !== m.from) return; // expired: the next digest asks again
    if (m.done) this.pending.delete(m.req);
    const part = ref(p.part);
    for (const b of m.items) {
      this.fetching.delete(b.id);
      if (this.host.reservations.state(b.id) !== undefined) continue;
      if (this.tombstones.freedAfter(b.id, b.ageMs)) { this.send({ kind: 'free', ids: [b.id] }); this.counts.freesResent++; continue; }
      this.tombstones.delete(b.id);
      const seq = new BigUint64Array(b.seq.buffer, b.seq.byteOffset, b.seq.length / 2);
      const ev: LifecycleEvent = {
        ...part, requestId: b.id, workerId: b.workerId, dpRank: b.dpRank, loraName: b.loraName, kind: 'add', seq,
        trackPrefillTokens: b.prefillTokens > 0, expectedOutputTokens: b.expectedOutputTokens, prefillTokens: b.prefillTokens, ageMs: b.ageMs,
      };
      const outcome = this.host.replicaEventOutcome(ev, b.owner);
      if (outcome !== 'applied') { this.drops.received(outcome); continue; }
      this.counts.added++;
      if (b.prefillDone) this.host.replicaEventOutcome({ ...part, requestId: b.id, workerId: b.workerId, dpRank: b.dpRank, loraName: b.loraName, kind: 'prefill_complete' });
    }
    if (m.done) this.checkSynced(m.from);
  }

  private onFree(id: string, parts: ReadonlyMap<string, Partition>): void {
    const row = this.host.reservations.lookup(id);
    const part = row ? parts.get(row.partitionKey) : undefined;
    if (row && part) this.host.replicaEventOutcome({ ...bookingRef(part, id, row), kind: 'free' });
    this.tombstones.record(id, row !== undefined);
  }

  // ---- helpers ----------------------------------------------------------------------------

  /** Drops a booking whose owner no longer holds it (nothing is published) and remembers its free. */
  private dropOwnerless(id: string, parts: ReadonlyMap<string, Partition>): void {
    const row = this.host.reservations.lookup(id);
    const part = row ? parts.get(row.partitionKey) : undefined;
    if (!row || !part) return;
    if (this.host.replicaEventOutcome({ ...bookingRef(part, id, row), kind: 'free' }) === 'applied') this.counts.dropped++;
    this.tombstones.record(id, true);
  }

  private rowsOf(partitionKey: string, owner: bigint): [string, ReservationRow][] { return rowsOf(this.host, partitionKey, owner); }

  private partsByKey(): Map<string, Partition> { return new Map(this.host.partitionList().map((p) => [p.key, p])); }

  /** Whether any request to `to` is still unanswered. */
  private awaiting(to: bigint): boolean {
    for (const p of this.pending.values()) if (p.to === to) return true;
    return false;
  }

  /** Drops requests and fetches unanswered for three intervals (a lost reply; the next digest asks again). */
  private expire(): void {
    const before = this.now() - 3 * this.intervalMs();
    for (const [req, p] of this.pending) if (p.at < before) this.pending.delete(req);
    for (const [id, at] of this.fetching) if (at < before) this.fetching.delete(id);
    if (this.settled.size > 100_000) this.settled.clear();
  }
}

const bookingRef = (part: Partition, id: string, row: ReservationRow) => ({
  ...ref(part), requestId: id, workerId: row.workerId, dpRank: row.dpRank, loraName: null,
});

/** One bucket of a folded digest as a string (`-` when empty). */
function bucketSig(b: readonly number[], j: number): string {
  for (let i = 0; i < b.length; i += 4) if (b[i] === j) return `${b[i + 1]}:${b[i + 2]}:${b[i + 3]}`;
  return '-';
}

/**
 * The answering side of anti-entropy: what a replica sends back when a peer asks for the ids of
 * some buckets of one (partition, owner) group (`want` -> `list`: id, worker, rank, age, prefill
 * state) or for whole bookings (`fetch` -> `bookings`: everything a peer needs to book the same
 * request again, with its owner and age). Replies come in chunks (well under the decoder's
 * bounds), the last one marked `done`; a request for nothing held still gets one empty reply, so
 * the asker knows it was answered.
 */
import type { SelectionCore } from '../core/core.js';
import type { Partition } from '../core/catalog/partition.js';
import type { ReservationRow } from '../core/booking/reservations.js';
import { slotOf } from './replica-digest.js';
import type { ListEntry, PartRef, RepairBody, RepairBooking, RepairMessage } from './replica-repair-wire.js';

/** What anti-entropy reads and changes of the core. */
export type RepairHost = Pick<SelectionCore, 'replicaId' | 'clock' | 'limits' | 'reservations' | 'partition' | 'partitionList' | 'replicaEventOutcome'>;

/** Chunk sizes of the messages (well under the decoder's bounds). */
export const CHUNK = { groups: 256, entries: 1024, ids: 512, bookings: 64 } as const;

export const ref = (p: Partition): PartRef => ({ modelName: p.modelName, routingGroup: p.routingGroup, blockSize: p.blockSize });
/** The owner of a row: the replica that admitted it (this one for a local row). */
export const ownerOf = (row: ReservationRow, me: bigint): bigint => (row.mirrored ? row.owner ?? 0n : me);
/** The bucket of an id among `mask + 1` (a power of two). */
export const bucketIndex = (id: string, mask: number): number => slotOf(id) & mask;

/** The rows of one (partition, owner) group, collected first (callers change the index while going through them). */
export function rowsOf(host: RepairHost, partitionKey: string, owner: bigint): [string, ReservationRow][] {
  const out: [string, ReservationRow][] = [];
  for (const [id, row] of host.reservations.bookedRows()) if (row.partitionKey === partitionKey && ownerOf(row, host.replicaId) === owner) out.push([id, row]);
  return out;
}

/** The ids of the asked buckets, in `list` chunks. */
export function listReply(host: RepairHost, m: Extract<RepairMessage, { kind: 'want' }>): RepairBody[] {
  const part = host.partition(m.part.modelName, m.part.routingGroup);
  const entries: ListEntry[] = [];
  if (part && part.blockSize === m.part.blockSize) {
    const buckets = new Set(m.buckets), mask = m.n - 1, now = host.clock.now();
    for (const [id, row] of rowsOf(host, part.key, m.owner)) {
      if (!buckets.has(bucketIndex(id, mask))) continue;
      const snap = part.loads.snapshot(id);
      entries.push({ id, workerId: row.workerId, dpRank: row.dpRank, ageMs: snap ? Math.max(0, Math.round(now - snap.admittedAt)) : 0, prefillDone: snap?.prefillDone ?? true });
    }
  }
  const out: RepairBody[] = [];
  for (let i = 0; i === 0 || i < entries.length; i += CHUNK.entries) {
    out.push({ kind: 'list', to: m.from, req: m.req, done: i + CHUNK.entries >= entries.length, entries: entries.slice(i, i + CHUNK.entries) });
  }
  return out;
}

/** The asked bookings this replica holds, in `bookings` chunks. */
export function bookingsReply(host: RepairHost, m: Extract<RepairMessage, { kind: 'fetch' }>): RepairBody[] {
  const part = host.partition(m.part.modelName, m.part.routingGroup);
  const items: RepairBooking[] = [];
  const now = host.clock.now();
  if (part && part.blockSize === m.part.blockSize) {
    for (const id of m.ids) {
      const row = host.reservations.lookup(id), snap = part.loads.snapshot(id);
      if (!row || row.partitionKey !== part.key || !snap) continue;
      items.push({
        id, workerId: row.workerId, dpRank: row.dpRank, owner: ownerOf(row, host.replicaId), ageMs: Math.max(0, Math.round(now - snap.admittedAt)),
        prefillTokens: snap.prefillTokens, prefillDone: snap.prefillDone, expectedOutputTokens: snap.expectedOutputTokens ?? null,
        loraName: snap.loraName ?? null, seq: snap.seq,
      });
    }
  }
  const out: RepairBody[] = [];
  for (let i = 0; i === 0 || i < items.length; i += CHUNK.bookings) {
    out.push({ kind: 'bookings', to: m.from, req: m.req, done: i + CHUNK.bookings >= items.length, items: items.slice(i, i + CHUNK.bookings) });
  }
  return out;
}

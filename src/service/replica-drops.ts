/**
 * Every replica-sync message that was dropped, by direction and reason, for
 * `select_service_replica_dropped_messages_total{direction, reason}` and one warning per reason
 * at most once a minute (the first one at once), with the number dropped since the last one.
 *
 * Reasons, sent: `send_queue_full` (the outbox holds its bound), `send_error` (the socket refused).
 * Received: `malformed` (frames, topic or payload), `own` (this replica's own message),
 * `receive_queue_full`, `lost` (published by a peer and never received: its digest says how many
 * it sent, a queue limit or a broken connection dropped them), `tombstoned` (an admission whose
 * free came first), `apply_error`, and the core's receive rules (`unknown_partition`,
 * `block_size_mismatch`, `unknown_worker`, `id_conflict`, `booking_limit`, `unknown_booking`).
 */
import type { ReplicaEventOutcome } from '../core/wire/events.js';
import type { Clock } from '../core/random.js';
import type { Logger } from './logger.js';

export type SendDrop = 'send_queue_full' | 'send_error';
export type ReceiveDrop = 'malformed' | 'own' | 'receive_queue_full' | 'lost' | 'tombstoned' | 'apply_error'
  | Exclude<ReplicaEventOutcome, 'applied'>;

/** One warning per reason per this interval. */
export const DROP_WARN_INTERVAL_MS = 60_000;

const WHY: Readonly<Record<SendDrop | ReceiveDrop, string>> = {
  send_queue_full: 'the send queue is full', send_error: 'the socket refused to send',
  malformed: 'malformed', own: 'our own message came back', receive_queue_full: 'the receive queue is full',
  lost: 'a peer published them and they never arrived (queue limit or broken connection; anti-entropy repairs them)',
  tombstoned: 'their booking was freed first', apply_error: 'applying them failed',
  unknown_partition: 'no such partition here', block_size_mismatch: 'the partition has another block size here',
  unknown_worker: 'the worker rank is not registered here', id_conflict: 'the id is claimed here or booked in another partition',
  booking_limit: '--max-bookings is reached', unknown_booking: 'no such booking here',
};

interface Series { count: number; warnedAt: number; since: number }

export class ReplicaDrops {
  private readonly series = new Map<string, Series>();

  constructor(private readonly logger: Logger, private readonly clock: Clock) {}

  sent(reason: SendDrop, n = 1): void { this.note('sent', reason, n); }
  received(reason: ReceiveDrop, n = 1): void { this.note('received', reason, n); }

  private note(direction: 'sent' | 'received', reason: SendDrop | ReceiveDrop, n: number): void {
    if (n <= 0) return;
    const key = `${direction}\u0000${reason}`;
    let s = this.series.get(key);
    if (s === undefined) { s = { count: 0, warnedAt: -Infinity, since: 0 }; this.series.set(key, s); }
    s.count += n;
    s.since += n;
    const now = this.clock.now();
    if (now - s.warnedAt < DROP_WARN_INTERVAL_MS) return;
    this.logger.warn({ direction, reason, dropped: s.since, total: s.count },
      `replica sync: ${s.since} message(s) ${direction === 'sent' ? 'not sent' : 'dropped on receipt'}: ${WHY[reason]}`);
    s.warnedAt = now;
    s.since = 0;
  }

  /** Dropped so far per (direction, reason). */
  *counts(): Iterable<{ direction: 'sent' | 'received'; reason: string; count: number }> {
    for (const [k, s] of this.series) {
      const [direction, reason] = k.split('\u0000');
      yield { direction: direction as 'sent' | 'received', reason, count: s.count };
    }
  }

  /** The total of one direction. */
  total(direction: 'sent' | 'received'): number {
    let n = 0;
    for (const c of this.counts()) if (c.direction === direction) n += c.count;
    return n;
  }
}

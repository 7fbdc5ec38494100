/**
 * Applying replica peers' events (api §6, §8): lifecycle events become mirrored bookings that
 * lifecycle calls here resolve; session bindings follow the version rules. Nothing is re-published.
 */
import { partitionKeyOf } from './catalog/catalog.js';
import type { AffinityEvent, ReplicaLifecycle } from './core-api.js';
import type { CoreState } from './core-state.js';
import type { Scheduler } from './select/scheduler.js';

export class ReplicaApply {
  constructor(private readonly s: CoreState, private readonly sched: Scheduler) {}

  /**
   * Applies a lifecycle event from a replica peer. Dropped (false): unknown partition, block-size
   * mismatch, a worker rank not registered (schedulable) here, an id claimed in flight here or
   * booked in another partition. A peer admission replaces a stale row of the same partition;
   * mirrored bookings are indexed, so lifecycle calls here resolve them. Nothing is re-published.
   */
  applyReplicaEvent(e: ReplicaLifecycle): boolean {
    const part = this.s.partitions.get(partitionKeyOf(e.modelName, e.routingGroup));
    if (!part || part.blockSize !== e.blockSize) return false;
    const id = e.requestId;
    if (e.kind === 'add') {
      if (!part.isSchedulable(e.workerId, e.dpRank)) return false;
      const st = this.s.reservations.state(id);
      if (st && (st.kind === 'claim' || st.partitionKey !== part.key)) return false;
      if (part.loads.has(id)) part.loads.free(id);
      const seq = BigUint64Array.from(e.seq ?? []);
      const ok = part.loads.book(id, e.workerId, e.dpRank, {
        seq: new Uint32Array(seq.buffer, seq.byteOffset, seq.length * 2), nBlocks: seq.length,
        trackPrefillTokens: e.trackPrefillTokens, prefillTokens: e.prefillTokens,
        expectedOutputTokens: e.expectedOutputTokens, islTokens: 0, loraName: e.loraName,
      });
      if (ok) {
        const prev = this.s.reservations.lookup(id);
        if (prev) this.s.releaseLease(prev);
        this.s.reservations.mirror(id, part.key, e.workerId, e.dpRank);
      }
      return ok;
    }
    const row = this.s.reservations.lookup(id);
    if (!row || row.partitionKey !== part.key || !part.loads.has(id)) return false;
    if (e.kind === 'prefill_complete') part.loads.prefillComplete(id);
    else {
      part.loads.free(id);
      this.s.removeRow(id);
    }
    this.sched.drain(part);
    return true;
  }

  /**
   * Applies a peer's session binding (api §8 apply rules). Dropped (false) when affinity is off,
   * the partition is unknown, or the target worker is not in this partition's catalog.
   */
  applyAffinityEvent(e: AffinityEvent): boolean {
    if (e.writerId === this.s.replicaId) return false;
    const part = this.s.partitions.get(partitionKeyOf(e.modelName, e.routingGroup));
    if (!part?.affinity || !part.workers.has(e.workerId)) return false;
    const r = part.affinity.applyRemote(e.sessionId, { workerId: e.workerId, dpRank: e.dpRank },
      { sequence: e.sequence, writerId: e.writerId });
    return r === 'inserted' || r === 'refreshed' || r === 'replaced_expired' || r === 'replaced_newer';
  }
}

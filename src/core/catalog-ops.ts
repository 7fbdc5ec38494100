/**
 * Worker catalog operations (api §2.1-§2.6, §3): upsert (replaces the record; may move it between
 * partitions), patch (present fields only, never a move), delete (drain, detach, release
 * bookings, remove), list, readiness; and the reconcile of one record against its partition:
 * schedulability reasons, partition creation, rank diff, KV-event listeners.
 */
import { workerNotFound } from './errors.js';
import { FilterQuerySchema, WorkerPatchSchema, WorkerRequestSchema, type FilterQuery, type WorkerRequest } from './wire/schemas.js';
import {
  applyPatch, compareRecords, eventEndpoints, metadataReasons, partitionKeyOf, ranksOf, toRecord, type WorkerEntry,
} from './catalog/catalog.js';
import type { Partition } from './catalog/partition.js';
import { parseBody, type CoreState } from './core-state.js';
import type { Scheduler } from './select/scheduler.js';
import type { ReadyResponse, WorkerRecord } from './wire/types.js';

export class CatalogOps {
  constructor(private readonly s: CoreState, private readonly sched: Scheduler, private readonly live: () => void) {}

  upsertWorker(input: unknown): WorkerRecord {
    this.live();
    const req = parseBody(WorkerRequestSchema, input);
    return toRecord(this.reconcileWorker(req));
  }

  patchWorker(workerId: bigint, input: unknown): WorkerRecord {
    this.live();
    const patch = parseBody(WorkerPatchSchema, input);
    const existing = this.s.workers.get(workerId);
    if (!existing) throw workerNotFound(workerId);
    return toRecord(this.reconcileWorker(applyPatch(existing.req, patch)));
  }

  deleteWorker(workerId: bigint): WorkerRecord {
    const e = this.s.workers.get(workerId);
    if (!e) throw workerNotFound(workerId);
    e.lifecycle = 'draining';
    this.detach(e);
    e.lifecycle = 'unschedulable';
    this.s.workers.delete(workerId);
    return toRecord(e, 'unschedulable');
  }

  listWorkers(filter: FilterQuery | unknown = {}): WorkerRecord[] {
    const f = parseBody(FilterQuerySchema, filter);
    const out: WorkerRecord[] = [];
    for (const e of this.s.workers.values()) {
      if (f.model_name !== undefined && e.req.model_name !== f.model_name) continue;
      if (f.routing_group !== undefined && e.req.routing_group !== f.routing_group) continue;
      out.push(toRecord(e));
    }
    return out.sort(compareRecords);
  }

  ready(): ReadyResponse {
    let n = 0;
    for (const e of this.s.workers.values()) if (e.lifecycle === 'schedulable') n++;
    return { ready: !this.s.shuttingDown && n > 0, schedulable_workers: n, workers: this.listWorkers() };
  }

  /** Apply a full worker record: partition move, reasons, partition creation, rank diff, listeners. */
  private reconcileWorker(req: WorkerRequest): WorkerEntry {
    const key = partitionKeyOf(req.model_name, req.routing_group);
    const prev = this.s.workers.get(req.worker_id);
    const entry: WorkerEntry = { req, lifecycle: 'incomplete', reasons: [], partitionKey: null };
    const oldRanks = prev && prev.partitionKey === key ? new Set(ranksOf(prev.req)) : null;
    if (prev && prev.partitionKey !== null && prev.partitionKey !== key) this.detach(prev);

    const reasons = metadataReasons(req, { queueing: this.s.queueing, kvEvents: this.s.config.useKvEvents });
    let part: Partition | null = null;
    if (reasons.length === 0) {
      try {
        part = this.s.ensurePartition(req.model_name, req.routing_group, req.block_size as number, req.is_eagle ?? false);
      } catch (err) {
        reasons.push(`reconciliation failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (part && this.s.fedByEvents) {
      try {
        this.s.feed!.reconcile(part, req.worker_id, eventEndpoints(req), req.replay_endpoint ?? null);
      } catch (err) {
        reasons.push(`reconciliation failed: ${err instanceof Error ? err.message : String(err)}`);
        part = null;
      }
    }
    entry.reasons = reasons;
    if (!part || reasons.length > 0) {
      if (prev && prev.partitionKey !== null) this.detach(prev);
      this.s.workers.set(req.worker_id, entry);
      return entry;
    }
    // same partition: keep bookings on ranks present in both snapshots
    const newRanks = new Set(ranksOf(req));
    if (oldRanks) {
      for (const r of oldRanks) if (!newRanks.has(r)) this.dropRank(part, req.worker_id, r);
    }
    for (const r of newRanks) part.loads.addRank(req.worker_id, r);
    entry.lifecycle = 'schedulable';
    entry.partitionKey = key;
    part.setWorker(entry);
    this.s.workers.set(req.worker_id, entry);
    this.sched.drain(part);
    return entry;
  }

  /** Remove a worker from its partition: listeners, blocks, bookings, reservation rows. */
  private detach(e: WorkerEntry): void {
    if (e.partitionKey === null) return;
    const part = this.s.partitions.get(e.partitionKey);
    e.partitionKey = null;
    if (!part) return;
    part.removeWorker(e.req.worker_id);
    if (this.s.fedByEvents) this.s.feed!.detach(e.req.worker_id);
    for (const r of part.loads.ranks()) if (r.workerId === e.req.worker_id) this.dropRank(part, r.workerId, r.dpRank);
    part.index.removeWorker(e.req.worker_id);
    this.sched.drain(part);
  }

  private dropRank(part: Partition, workerId: bigint, dpRank: number): void {
    for (const id of part.loads.removeRank(workerId, dpRank)) this.s.removeRow(id);
    for (const id of this.s.reservations.idsOfWorker(workerId, dpRank)) {
      const row = this.s.reservations.lookup(id);
      if (row && row.partitionKey === part.key) this.s.removeRow(id);
    }
    if (!this.s.fedByEvents) part.index.removeRank(workerId, dpRank); // else the feed drops retired ranks
    part.approx?.removeRank(workerId, dpRank);
    part.predicted?.removeRank(workerId, dpRank);
  }
}

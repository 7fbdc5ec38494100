/**
 * One routing partition `(model_name, routing_group)` (Dynamo `lib/kv-router/src/services/selection/catalog.rs`): created by its first valid
 * worker and destroyed when its last worker leaves (its wasm index handles are then free again);
 * its block size and eagle flag are fixed while it exists. It owns the prefix index, the active
 * loads, and the worker-selection policy instance.
 */
import { KvIndex } from '../index/kv-index.js';
import { ActiveLoads } from '../load/loads.js';
import { ApproxIndex } from '../index/approx.js';
import type { WorkerSelectionPolicy } from '../select/policy.js';
import type { WorkerEntry } from './catalog.js';
import { ranksOf } from './catalog.js';
import type { Clock, Rng } from '../random.js';
import type { AdmissionQueue, Waiter } from '../select/queue.js';
import type { SessionAffinityTable } from '../booking/affinity.js';

/** A schedulable rank, with its `worker_id:dp_rank` key (the key of loads and overlap rows). */
export interface RankRef { readonly entry: WorkerEntry; readonly dpRank: number; readonly key: string }

export interface PartitionOptions {
  modelName: string; routingGroup: string; blockSize: number; isEagle: boolean;
  clock: Clock; rng: Rng; expirySecs: number;
  policy: WorkerSelectionPolicy | null;
  /** Indexing mode (Dynamo `lib/kv-router/src/services/selection/README.md`): 'events' (primary fed by KV events), 'approximate' (primary fed
   * by bookings with TTL), or 'events+predicted' (plus a TTL side index fed by bookings). */
  mode: 'events' | 'approximate' | 'events+predicted';
  /** TTL of recorded bookings, seconds (router_ttl_secs, or router_predicted_ttl_secs for the side index). */
  ttlSecs: number;
}

export class Partition {
  readonly key: string;
  readonly modelName: string;
  readonly routingGroup: string;
  readonly blockSize: number;
  readonly isEagle: boolean;
  readonly index: KvIndex;
  readonly loads: ActiveLoads;
  readonly policy: WorkerSelectionPolicy | null;
  /** Booking recorder of the primary (approximate mode), else null. */
  readonly approx: ApproxIndex | null;
  /** The predicted side index (KV events + `router_predicted_ttl_secs`), else null. */
  readonly predicted: ApproxIndex | null;
  /** Admission queue (set by the core at creation). */
  queue!: AdmissionQueue<Waiter>;
  /** Session binding table (Dynamo `lib/kv-router/src/services/selection/affinity.rs`), when session affinity is on (set by the core). */
  affinity: SessionAffinityTable | null = null;
  /** Schedulable workers of this partition, by id (change it through setWorker / removeWorker). */
  readonly workers = new Map<bigint, WorkerEntry>();
  /** schedulableRanks() until the worker set changes (it runs on every selection). */
  private rankCache: RankRef[] | null = null;
  /** Set by {@link destroy}: the indexes are freed (a request that awaited meanwhile matches nothing). */
  destroyed = false;

  constructor(key: string, o: PartitionOptions) {
    this.key = key;
    this.modelName = o.modelName;
    this.routingGroup = o.routingGroup;
    this.blockSize = o.blockSize;
    this.isEagle = o.isEagle;
    this.index = new KvIndex(o.blockSize);
    let side: KvIndex | null = null;
    try {
      if (o.mode === 'events+predicted') side = new KvIndex(o.blockSize);
    } catch (err) {
      this.index.destroy(); // no handle leaks when the second one is not available
      throw err;
    }
    this.loads = new ActiveLoads({ blockSize: o.blockSize, clock: o.clock, rng: o.rng, expirySecs: o.expirySecs });
    this.policy = o.policy;
    this.approx = o.mode === 'approximate' ? new ApproxIndex(this.index, { clock: o.clock, ttlSecs: o.ttlSecs }) : null;
    this.predicted = side ? new ApproxIndex(side, { clock: o.clock, ttlSecs: o.ttlSecs }) : null;
  }

  /** The recorder that bookings feed (approximate primary or predicted side index), if any. */
  recorder(): ApproxIndex | null { return this.approx ?? this.predicted; }

  /** Schedulable (worker, rank) pairs sorted by (worker_id, dp_rank), with their `worker:rank` key. */
  schedulableRanks(): readonly RankRef[] {
    if (this.rankCache !== null) return this.rankCache;
    const ids = [...this.workers.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const out: RankRef[] = [];
    for (const id of ids) {
      const e = this.workers.get(id) as WorkerEntry;
      if (e.lifecycle !== 'schedulable') continue;
      for (const r of ranksOf(e.req)) out.push({ entry: e, dpRank: r, key: `${id}:${r}` });
    }
    this.rankCache = out;
    return out;
  }

  /** Adds or replaces a worker of this partition. */
  setWorker(entry: WorkerEntry): void {
    this.workers.set(entry.req.worker_id, entry);
    this.rankCache = null;
  }

  /** Removes a worker from this partition. */
  removeWorker(workerId: bigint): void {
    this.workers.delete(workerId);
    this.rankCache = null;
  }

  /** Number of schedulable workers. */
  schedulableCount(): number {
    let n = 0;
    for (const e of this.workers.values()) if (e.lifecycle === 'schedulable') n++;
    return n;
  }

  /** Whether (worker, rank) is schedulable here. */
  isSchedulable(workerId: bigint, dpRank: number): WorkerEntry | undefined {
    const e = this.workers.get(workerId);
    if (!e || e.lifecycle !== 'schedulable') return undefined;
    const s = e.req.data_parallel_start_rank ?? 0, n = e.req.data_parallel_size ?? 1;
    return dpRank >= s && dpRank < s + n ? e : undefined;
  }

  /** Whether a session target is still live: its worker schedulable here (and its rank, if any). */
  targetLive(t: { workerId: bigint; dpRank: number | null }): boolean {
    if (t.dpRank !== null) return this.isSchedulable(t.workerId, t.dpRank) !== undefined;
    return this.workers.get(t.workerId)?.lifecycle === 'schedulable';
  }

  /** Partition display for messages. */
  label(): string { return `partition "${this.modelName}/${this.routingGroup}"`; }

  /** Frees the wasm indexes (idempotent). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.index.destroy();
    this.predicted?.index.destroy();
  }
}

/**
 * SelectionCore: every operation of the selection API (api §2-§5) as a method, over the worker
 * catalog, the partitions (index + active loads + queue + policy + session table), the
 * process-wide reservation index and the pending-selection cache. Isomorphic: time and
 * randomness are injected, there are no timers (the host calls {@link SelectionCore.maintain}
 * periodically; every operation also runs due maintenance first), and KV-event listeners are
 * attached through an {@link IndexFeed}.
 *
 * Rule for every mutation: validate first (schemas, prompt fields, readiness, claims), then
 * change state; a failure after a claim releases it, so nothing stays half-booked.
 *
 * This file wires the pieces: shared state (core-state.ts), scheduling (scheduler.ts), bookings
 * (booking.ts), and the operation groups (catalog-ops, select-ops, reservation-ops, inspection,
 * replica-apply), each one concept.
 */
import { ConfigError, LIMITS, type RouterConfig } from './config/config.js';
import { shuttingDown, subscriberShutdown } from './errors.js';
import { partitionKeyOf } from './catalog/catalog.js';
import type { Partition } from './catalog/partition.js';
import { PromptNormalizer } from './index/prompt.js';
import type { PendingSelectionCache } from './booking/pending.js';
import type { ReservationIndex } from './booking/reservations.js';
import type { AffinityLease } from './booking/affinity.js';
import type { RouterEvent } from './index/kv-index.js';
import { CoreState, MS } from './core-state.js';
import { Scheduler } from './select/scheduler.js';
import { Booker } from './booking/booker.js';
import { CatalogOps } from './catalog-ops.js';
import { SelectOps } from './select-ops.js';
import { ReservationOps } from './reservation-ops.js';
import { Inspection } from './inspection.js';
import { ReplicaApply } from './replica-apply.js';
import { systemRng } from './random.js';
import type { AffinityEvent, CoreOptions, CoreResult, ReplicaLifecycle } from './core-api.js';
import type {
  Clock, DumpResponse, ModelLoadResponse, OverlapScoresResponse, PotentialLoad, ReadyResponse, ReservationResponse, Rng,
  SelectOptions, SelectResponse, SelectionApi, StatusOk, WorkerRecord,
} from './wire/types.js';

export { seededRng, systemClock, systemRng } from './random.js';
export type {
  AffinityEvent, CoreHooks, CoreOptions, CoreResult, FeedPartition, IndexFeed, LifecycleEvent, ReplicaLifecycle,
  SelectionCacheConfig, SessionAffinityConfig, Waiter,
} from './core-api.js';

export class SelectionCore implements SelectionApi {
  private readonly s: CoreState;
  private readonly sched: Scheduler;
  private readonly catalog: CatalogOps;
  private readonly selections: SelectOps;
  private readonly reservationOps: ReservationOps;
  private readonly inspection: Inspection;
  private readonly replica: ReplicaApply;
  /** Start-up warnings for the host to log (e.g. an unsupported approximate cache policy). */
  readonly warnings: string[] = [];
  private lastSweep: number;
  private lastRecheck: number;
  private lastReap: number;

  private constructor(config: RouterConfig, o: CoreOptions, normalizer: PromptNormalizer, rng: Rng) {
    const s = new CoreState(config, o, normalizer, rng);
    this.s = s;
    const live = (): void => this.live();
    this.sched = new Scheduler(s);
    const booker = new Booker(s);
    this.catalog = new CatalogOps(s, this.sched, live);
    this.selections = new SelectOps(s, this.sched, booker, live);
    this.reservationOps = new ReservationOps(s, this.sched, booker, live);
    this.inspection = new Inspection(s, this.sched, live, () => this.maintain());
    this.replica = new ReplicaApply(s, this.sched);
    this.lastSweep = this.lastRecheck = this.lastReap = s.clock.now();
    if (!config.useKvEvents && config.routerApproximateCachePolicy === 'lru') {
      this.warnings.push('router_approximate_cache_policy=lru is not supported by the standalone selector; bookings use TTL retention (router_ttl_secs) instead');
    }
  }

  /**
   * An unsynchronised local core (tests, simulations, embedding). Fails with a ConfigError for
   * an invalid tracking-hash configuration (keyed mode without a 32-byte key or a key id), an
   * unknown worker-selection policy name, or a session-affinity TTL outside 1 .. 31,536,000 s.
   */
  static tryNewLocal(config: RouterConfig, options: CoreOptions = {}): CoreResult {
    const rng = options.rng ?? systemRng();
    let normalizer: PromptNormalizer;
    try {
      if (config.routerTrackingHash === 'keyed-xxh3-v1') {
        if (!options.trackingKey || options.trackingKey.length !== 32) {
          throw new ConfigError(['DYN_ROUTER_TRACKING_KEY_FILE: keyed-xxh3-v1 requires a 32-byte tracking key']);
        }
        if (!config.routerTrackingKeyId) throw new ConfigError(['DYN_ROUTER_TRACKING_KEY_ID: keyed-xxh3-v1 requires router_tracking_key_id']);
      }
      normalizer = new PromptNormalizer({
        mode: config.routerTrackingHash, key: options.trackingKey ?? null, keyId: config.routerTrackingKeyId,
      }, rng);
      const aff = options.sessionAffinity;
      if (aff && !(aff.ttlSecs >= LIMITS.sessionAffinityTtlMinSecs && aff.ttlSecs <= LIMITS.sessionAffinityTtlMaxSecs)) {
        throw new ConfigError([`--session-affinity-ttl-secs: must be between ${LIMITS.sessionAffinityTtlMinSecs} and ${LIMITS.sessionAffinityTtlMaxSecs} (got ${aff.ttlSecs})`]);
      }
      if (aff && aff.mode !== 'hard' && aff.mode !== 'soft') {
        throw new ConfigError([`--session-affinity-mode: must be hard or soft (got ${String(aff.mode)})`]);
      }
      const inst = options.policyConfig?.aggregated;
      const name = inst?.type ?? config.workerSelectionPolicy;
      if (name && name !== 'default' && !options.policies?.has(name)) {
        const where = inst ? 'DYN_ROUTER_POLICY_CONFIG worker_selection' : 'DYN_ROUTER_WORKER_SELECTION_POLICY';
        throw new ConfigError([`${where}: unknown worker selection policy type "${name}"`]);
      }
    } catch (err) {
      if (err instanceof ConfigError) return { ok: false, error: err };
      return { ok: false, error: new ConfigError([err instanceof Error ? err.message : String(err)]) };
    }
    return { ok: true, core: new SelectionCore(config, options, normalizer, rng) };
  }

  /** Like tryNewLocal, throwing the ConfigError. */
  static newLocal(config: RouterConfig, options: CoreOptions = {}): SelectionCore {
    const r = SelectionCore.tryNewLocal(config, options);
    if (!r.ok) throw r.error;
    return r.core;
  }

  get config(): RouterConfig { return this.s.config; }
  get clock(): Clock { return this.s.clock; }
  get rng(): Rng { return this.s.rng; }
  /** This replica's id (replica-sync `router_id`, affinity `writer_id`). */
  get replicaId(): bigint { return this.s.replicaId; }
  /** The process-wide reservation index (inspection, tests). */
  get reservations(): ReservationIndex<AffinityLease> { return this.s.reservations; }
  /** The pending-selection cache (inspection, tests). */
  get pending(): PendingSelectionCache { return this.s.pending; }

  // ---- lifecycle of the core --------------------------------------------------------------

  get shuttingDown(): boolean { return this.s.shuttingDown; }

  /** After this, mutations and selections fail `selection service is shutting down`; delete still works. */
  shutdown(): void {
    if (this.s.shuttingDown) return;
    this.s.shuttingDown = true;
    for (const p of this.s.partitions.values()) {
      for (const w of p.queue.payloads()) { p.queue.remove(w); w.fail(subscriberShutdown()); }
    }
  }

  private live(): void {
    if (this.s.shuttingDown) throw shuttingDown();
    this.maintain();
  }

  /**
   * Runs due periodic work: the queue recheck (every 60 s with queueing), approximate-index
   * expiry, the session reaper (every min(ttl, 30 s)), and the expiry sweep every 60 s (api §5.4),
   * which frees bookings older than `DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS` (local: nothing is
   * published) and drops reservation rows whose booking vanished.
   */
  maintain(): void {
    const s = this.s, now = s.clock.now();
    if (s.queueing && now - this.lastRecheck >= LIMITS.queueRecheckSecs * MS) {
      this.lastRecheck = now;
      for (const p of s.partitions.values()) this.sched.drain(p);
    }
    for (const p of s.partitions.values()) { p.approx?.expire(); p.predicted?.expire(); }
    if (s.affinity && now - this.lastReap >= Math.min(s.affinity.ttlSecs, LIMITS.affinityReapMaxSecs) * MS) {
      this.lastReap = now;
      for (const p of s.partitions.values()) p.affinity?.reap();
    }
    if (now - this.lastSweep < LIMITS.expirySweepSecs * MS) return;
    this.lastSweep = now;
    this.sweepExpired();
  }

  /** The expiry sweep itself (also callable directly). Returns the freed reservation ids. */
  sweepExpired(): string[] {
    const s = this.s;
    const freed: string[] = [];
    for (const p of s.partitions.values()) for (const id of p.loads.expire()) freed.push(id);
    for (const id of freed) s.removeRow(id);
    const swept = s.reservations.sweep((id, row) => s.partitions.get(row.partitionKey)?.loads.has(id) === true);
    for (const { row } of swept) s.releaseLease(row);
    if (freed.length > 0) for (const p of s.partitions.values()) this.sched.drain(p);
    return freed;
  }

  /** A partition by model and group (hosts and simulations feed its index directly). */
  partition(modelName: string, routingGroup: string): Partition | undefined {
    return this.s.partitions.get(partitionKeyOf(modelName, routingGroup));
  }

  /** Every partition. */
  partitionList(): Partition[] { return [...this.s.partitions.values()]; }

  /** Get or create a partition; a mismatching block size or eagle flag is a 409 SelectionError. */
  ensurePartition(modelName: string, routingGroup: string, blockSize: number, isEagle: boolean): Partition {
    return this.s.ensurePartition(modelName, routingGroup, blockSize, isEagle);
  }

  // ---- the API (see the operation modules) ------------------------------------------------

  upsertWorker(input: unknown): WorkerRecord { return this.catalog.upsertWorker(input); }
  patchWorker(workerId: bigint, input: unknown): WorkerRecord { return this.catalog.patchWorker(workerId, input); }
  deleteWorker(workerId: bigint): WorkerRecord { return this.catalog.deleteWorker(workerId); }
  listWorkers(filter: unknown = {}): WorkerRecord[] { return this.catalog.listWorkers(filter); }
  ready(): ReadyResponse { return this.catalog.ready(); }

  select(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> { return this.selections.select(input, opts); }
  selectAndReserve(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> { return this.selections.selectAndReserve(input, opts); }

  createReservation(input: unknown): Promise<ReservationResponse> { return this.reservationOps.createReservation(input); }
  prefillComplete(reservationId: string): StatusOk { return this.reservationOps.prefillComplete(reservationId); }
  addOutputBlock(reservationId: string, body: unknown): StatusOk { return this.reservationOps.addOutputBlock(reservationId, body); }
  freeReservation(reservationId: string): StatusOk { return this.reservationOps.freeReservation(reservationId); }

  loads(filter: unknown = {}): ModelLoadResponse[] { return this.inspection.loads(filter); }
  potentialLoads(input: unknown): PotentialLoad[] { return this.inspection.potentialLoads(input); }
  overlapScores(input: unknown): OverlapScoresResponse { return this.inspection.overlapScores(input); }
  dump(): DumpResponse { return this.inspection.dump(); }

  /**
   * Load a dump (api §7.2): each `"model:group"` key split at the first ':' gets its partition
   * (created with the dump's block size when new) and its events applied. Returns events applied.
   */
  loadDump(dump: Readonly<Record<string, { block_size: number; events: readonly RouterEvent[] }>>): number {
    return this.inspection.loadDump(dump);
  }

  /** Applies a replica peer's lifecycle event (api §6); false when the receive rules drop it. */
  applyReplicaEvent(e: ReplicaLifecycle): boolean { return this.replica.applyReplicaEvent(e); }

  /** Applies a replica peer's session binding (api §8); false when dropped or ignored. */
  applyAffinityEvent(e: AffinityEvent): boolean { return this.replica.applyAffinityEvent(e); }

  /** Schedulable worker ids sorted (for tests and the simulator). */
  schedulableWorkerIds(): bigint[] {
    return [...this.s.workers.values()].filter((e) => e.lifecycle === 'schedulable').map((e) => e.req.worker_id)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

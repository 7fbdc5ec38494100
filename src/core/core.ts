/**
 * SelectionCore: every operation of the selection API (api §2-§5) as a method, over the worker
 * catalog, the partitions (index + active loads + policy), the process-wide reservation index
 * and the pending-selection cache. Isomorphic: time and randomness are injected, there are no
 * timers (the host calls {@link SelectionCore.maintain} periodically; every operation also
 * runs due maintenance first), and KV-event listeners are attached through {@link IndexFeed}.
 *
 * Rule for every mutation: validate first (schemas, prompt fields, readiness, claims), then
 * change state; a failure after a claim releases it, so nothing stays half-booked.
 */
import type { z } from 'zod';
import { ConfigError, LIMITS, applyOverride, queueingEnabled, type EffectiveRouterValues, type RouterConfig } from './config.js';
import {
  SelectionError, decayFractionOutOfRange, effectivePrefillExceedsIsl, noEndpoints, noLongerSchedulable, noSchedulableWorkers,
  noSchedulableWorkersFor, pendingNotFound, queueRejected, reservationNotFound, schedulableWorkerNotFound, shuttingDown,
  subscriberShutdown, workerNotFound,
} from './errors.js';
import { classQueues, poolIsBusy, policyConfigQueues, rankIsBusy, resolveProfile, type PolicyClassConfig, type RouterPolicyConfig } from './policy-config.js';
import { AdmissionQueue } from './queue.js';
import { buildKvHint, hintCapable, type KvHint } from './hints.js';
import { mergeOverlapMax } from './approx.js';
import {
  FilterQuerySchema, OutputBlockRequestSchema, PromptQuerySchema, ReservationRequestSchema, SelectAndReserveRequestSchema,
  SelectRequestSchema, WorkerPatchSchema, WorkerRequestSchema, describeIssues, type FilterQuery, type SelectAndReserveRequest,
  type WorkerRequest,
} from './schemas.js';
import {
  applyPatch, compareRecords, eventEndpoints, metadataReasons, partitionKeyOf, ranksOf, toRecord, type WorkerEntry,
} from './catalog.js';
import { Partition } from './partition.js';
import { SessionAffinityTable, type AffinityLease, type AffinityMode, type AffinityTarget, type Hold } from './affinity.js';
import { PromptNormalizer, checkPromptFields, type NormalizedPrompt, type PromptFields } from './prompt.js';
import { PendingSelectionCache } from './pending.js';
import { ReservationIndex } from './reservations.js';
import { defaultCosts, eligible, pickByCost, type Candidate } from './selector.js';
import { CandidateRowView, PolicyRegistry, runPolicy, selectionContext, type WorkerSelectionContext } from './policy.js';
import type { RouterEvent } from './kv-index.js';
import type {
  Clock, DumpResponse, ModelLoadResponse, OverlapScoresResponse, OverlapSummary, PotentialLoad, ReadyResponse,
  ReservationResponse, Rng, SelectOptions, SelectResponse, SelectionApi, StatusOk, WorkerRecord,
} from './types.js';

/** A partition as the KV-event ingress sees it. */
export interface FeedPartition { modelName: string; routingGroup: string; blockSize: number; isEagle: boolean; index: Partition['index'] }

/**
 * Where KV events come from (the Node service's ZMQ ingress implements it). `reconcile` throws
 * (with nothing changed) when an endpoint is invalid; the worker is then `incomplete` with
 * `reconciliation failed: <message>`.
 */
export interface IndexFeed {
  reconcile(partition: FeedPartition, workerId: bigint, ranks: ReadonlyMap<number, string>, replayEndpoint: string | null): void;
  detach(workerId: bigint): void;
}

/** A booking lifecycle event, for replica sync (api §6). */
export type LifecycleEvent = {
  modelName: string; routingGroup: string; blockSize: number; requestId: string; workerId: bigint; dpRank: number; loraName?: string;
} & (
  | { kind: 'add'; seq: BigUint64Array; trackPrefillTokens: boolean; expectedOutputTokens?: number; prefillTokens: number }
  | { kind: 'prefill_complete' }
  | { kind: 'free' }
);

/** A lifecycle event received from a replica peer (already decoded). */
export type ReplicaLifecycle = {
  modelName: string; routingGroup: string; blockSize: number; requestId: string; workerId: bigint; dpRank: number; loraName?: string;
} & (
  | { kind: 'add'; seq: readonly bigint[] | null; trackPrefillTokens: boolean; expectedOutputTokens?: number; prefillTokens: number }
  | { kind: 'prefill_complete' }
  | { kind: 'free' }
);

/** A session binding published by (or received from) a replica (api §6, §8). */
export interface AffinityEvent {
  modelName: string; routingGroup: string; sessionId: string; workerId: bigint; dpRank: number | null;
  sequence: bigint; writerId: bigint;
}

/** Host hooks. */
export interface CoreHooks {
  /** Called after a local admission, prefill completion (also repeated) and free. */
  onLifecycle?(ev: LifecycleEvent): void;
  /** Called when a session binding is committed, rebound or refreshed (affinity on). */
  onAffinity?(ev: AffinityEvent): void;
}

/** Session affinity (api §8): off unless a TTL is configured. */
export interface SessionAffinityConfig {
  ttlSecs: number;
  mode: AffinityMode;
  /** Bindings per partition table (default 65,536). */
  maxEntries?: number;
}

/** Pending-selection cache limits (api §5.2; CLI `--selection-cache-*`). */
export interface SelectionCacheConfig { ttlSecs: number; maxEntries: number; maxBytes: number }

/** Options of a local core. */
export interface CoreOptions {
  clock?: Clock;
  rng?: Rng;
  selectionCache?: Partial<SelectionCacheConfig>;
  /** Raw 32-byte key for `keyed-xxh3-v1` (the Node side reads `router_tracking_key_file`). */
  trackingKey?: Uint8Array;
  /** Custom policy types (api §10), chosen by `DYN_ROUTER_WORKER_SELECTION_POLICY`. */
  policies?: PolicyRegistry;
  /** Policy instance parameters, when the policy is chosen by name. */
  policyParameters?: Readonly<Record<string, unknown>>;
  /** The parsed `DYN_ROUTER_POLICY_CONFIG` document (policy classes, worker_selection). */
  policyConfig?: RouterPolicyConfig | null;
  feed?: IndexFeed;
  hooks?: CoreHooks;
  /** Session affinity tables (api §8); null/absent = off. TTL 1 .. 31,536,000 s. */
  sessionAffinity?: SessionAffinityConfig | null;
  /** This replica's random non-zero id (`router_id` / affinity `writer_id`); default random. */
  replicaId?: bigint;
  /** First affinity version sequence; default wall-clock nanoseconds (api §8). */
  affinitySequenceStart?: bigint;
}

/** `Result` of {@link SelectionCore.tryNewLocal}. */
export type CoreResult = { ok: true; core: SelectionCore } | { ok: false; error: ConfigError };

const MS = 1000;

export { seededRng, systemClock, systemRng } from './random.js';
import { systemClock, systemRng } from './random.js';

function parse<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new SelectionError('SEL_UNPROCESSABLE', describeIssues(r.error));
  return r.data;
}

const cmpBig = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

/** One scheduled choice, before booking. */
interface Choice {
  part: Partition;
  entry: WorkerEntry;
  dpRank: number;
  prompt: NormalizedPrompt;
  eff: EffectiveRouterValues;
  overlap: OverlapSummary;
  cachedTokens: number;
  effectivePrefillTokens: number;
  potentialDecodeBlocks: number;
  activePrefillTokens: number;
}

/** Per-rank data gathered for scheduling. */
interface RankInfo { entry: WorkerEntry; cand: Candidate }

/** Tiered overlap of one rank (blocks) and its cached tokens. */
interface RankCache { device: number; hostExt: number; diskExt: number; externalExt: number; cachedTokens: number }

/** A request waiting in a partition's admission queue. */
export interface Waiter {
  canRun(): boolean;
  run(): void;
  fail(err: unknown): void;
}

export class SelectionCore implements SelectionApi {
  readonly config: RouterConfig;
  readonly clock: Clock;
  readonly rng: Rng;
  private readonly workers = new Map<bigint, WorkerEntry>();
  private readonly partitions = new Map<string, Partition>();
  readonly reservations = new ReservationIndex<AffinityLease>();
  /** This replica's id (replica-sync `router_id`, affinity `writer_id`). */
  readonly replicaId: bigint;
  private readonly affinity: SessionAffinityConfig | null;
  private readonly affinitySequenceStart: bigint;
  private lastReap: number;
  readonly pending: PendingSelectionCache;
  private readonly normalizer: PromptNormalizer;
  private readonly policies: PolicyRegistry | null;
  private readonly policyParameters: Readonly<Record<string, unknown>>;
  private readonly feed: IndexFeed | null;
  private readonly hooks: CoreHooks;
  private readonly queueing: boolean;
  private readonly policyConfig: RouterPolicyConfig | null;
  private lastSweep: number;
  private lastRecheck: number;
  /** Start-up warnings for the host to log (e.g. an unsupported approximate cache policy). */
  readonly warnings: string[] = [];
  private shutdownFlag = false;

  private constructor(config: RouterConfig, o: CoreOptions, normalizer: PromptNormalizer, rng: Rng) {
    this.config = config;
    this.clock = o.clock ?? systemClock;
    this.rng = rng;
    const c = o.selectionCache ?? {};
    this.pending = new PendingSelectionCache({
      clock: this.clock,
      ttlSecs: c.ttlSecs ?? LIMITS.selectionCacheTtlSecs,
      maxEntries: c.maxEntries ?? LIMITS.selectionCacheMaxEntries,
      maxBytes: c.maxBytes ?? LIMITS.selectionCacheMaxBytes,
    });
    this.normalizer = normalizer;
    this.policies = o.policies ?? null;
    this.policyParameters = o.policyParameters ?? {};
    this.feed = o.feed ?? null;
    this.hooks = o.hooks ?? {};
    this.policyConfig = o.policyConfig ?? null;
    this.queueing = queueingEnabled(config, policyConfigQueues(this.policyConfig));
    this.lastSweep = this.clock.now();
    this.lastRecheck = this.lastSweep;
    this.lastReap = this.lastSweep;
    this.replicaId = o.replicaId ?? (rng.u64() | 1n);
    this.affinity = o.sessionAffinity ?? null;
    this.affinitySequenceStart = o.affinitySequenceStart ?? BigInt(Date.now()) * 1_000_000n;
    if (!config.useKvEvents && config.routerApproximateCachePolicy === 'lru') {
      this.warnings.push('router_approximate_cache_policy=lru is not supported by the standalone selector; bookings use TTL retention (router_ttl_secs) instead');
    }
  }

  /**
   * An unsynchronised local core (tests, simulations, embedding). Fails with a ConfigError for
   * an invalid tracking-hash configuration (keyed mode without a 32-byte key) or an unknown
   * worker-selection policy name.
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

  // ---- lifecycle of the core --------------------------------------------------------------

  get shuttingDown(): boolean { return this.shutdownFlag; }

  /** After this, mutations and selections fail `selection service is shutting down`; delete still works. */
  shutdown(): void {
    if (this.shutdownFlag) return;
    this.shutdownFlag = true;
    for (const p of this.partitions.values()) {
      for (const w of p.queue.payloads()) { p.queue.remove(w); w.fail(subscriberShutdown()); }
    }
  }

  private live(): void {
    if (this.shutdownFlag) throw shuttingDown();
    this.maintain();
  }

  /**
   * Runs due periodic work: the expiry sweep every 60 s (api §5.4) frees bookings older than
   * `DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS` (local: nothing is published) and drops reservation
   * rows whose booking vanished.
   */
  maintain(): void {
    const now = this.clock.now();
    if (this.queueing && now - this.lastRecheck >= LIMITS.queueRecheckSecs * MS) {
      this.lastRecheck = now;
      for (const p of this.partitions.values()) this.drain(p);
    }
    for (const p of this.partitions.values()) { p.approx?.expire(); p.predicted?.expire(); }
    if (this.affinity && now - this.lastReap >= Math.min(this.affinity.ttlSecs, LIMITS.affinityReapMaxSecs) * MS) {
      this.lastReap = now;
      for (const p of this.partitions.values()) p.affinity?.reap();
    }
    if (now - this.lastSweep < LIMITS.expirySweepSecs * MS) return;
    this.lastSweep = now;
    this.sweepExpired();
  }

  /** The expiry sweep itself (also callable directly). Returns the freed reservation ids. */
  sweepExpired(): string[] {
    const freed: string[] = [];
    for (const p of this.partitions.values()) {
      for (const id of p.loads.expire()) freed.push(id);
    }
    for (const id of freed) this.removeRow(id);
    const swept = this.reservations.sweep((id, row) => {
      const p = this.partitions.get(row.partitionKey);
      return p !== undefined && p.loads.has(id);
    });
    for (const { row } of swept) this.releaseLease(row);
    if (freed.length > 0) for (const p of this.partitions.values()) this.drain(p);
    return freed;
  }

  /** A partition by model and group (hosts and simulations feed its index directly). */
  partition(modelName: string, routingGroup: string): Partition | undefined {
    return this.partitions.get(partitionKeyOf(modelName, routingGroup));
  }

  /** Every partition. */
  partitionList(): Partition[] { return [...this.partitions.values()]; }

  /** Get or create a partition; a mismatching block size or eagle flag is a 409 SelectionError. */
  ensurePartition(modelName: string, routingGroup: string, blockSize: number, isEagle: boolean): Partition {
    const key = partitionKeyOf(modelName, routingGroup);
    const p = this.partitions.get(key);
    if (p) {
      if (p.blockSize !== blockSize) throw new SelectionError('SEL_CONFLICT', `${p.label()} has block_size ${p.blockSize}, but ${blockSize} was requested`);
      if (p.isEagle !== isEagle) throw new SelectionError('SEL_CONFLICT', `${p.label()} has is_eagle ${p.isEagle}, but ${isEagle} was requested`);
      return p;
    }
    const inst = this.policyConfig?.aggregated ?? null;
    const name = inst?.type ?? this.config.workerSelectionPolicy;
    const params = inst?.parameters ?? this.policyParameters;
    const policy = name && name !== 'default' && this.policies
      ? this.policies.create(name, { modelName, routingGroup, blockSize }, params) : null;
    const created = new Partition(key, {
      modelName, routingGroup, blockSize, isEagle, clock: this.clock, rng: this.rng,
      expirySecs: this.config.activeRequestExpirySecs, trackActiveBlocks: this.config.routerTrackActiveBlocks, policy,
      mode: !this.config.useKvEvents ? 'approximate' : this.config.routerPredictedTtlSecs !== null ? 'events+predicted' : 'events',
      ttlSecs: !this.config.useKvEvents ? this.config.routerTtlSecs : this.config.routerPredictedTtlSecs ?? this.config.routerTtlSecs,
    });
    created.queue = new AdmissionQueue<Waiter>(
      resolveProfile(this.policyConfig, modelName, this.config.routerQueueThreshold, this.config.routerQueuePolicy), this.clock);
    const aff = this.affinity;
    if (aff) {
      created.affinity = new SessionAffinityTable({
        ttlSecs: aff.ttlSecs, mode: aff.mode, maxEntries: aff.maxEntries, clock: this.clock, writerId: this.replicaId,
        sequenceStart: this.affinitySequenceStart,
        publish: (sessionId, t, v) => this.hooks.onAffinity?.({
          modelName, routingGroup, sessionId, workerId: t.workerId, dpRank: t.dpRank, sequence: v.sequence, writerId: v.writerId,
        }),
      });
    }
    this.partitions.set(key, created);
    return created;
  }

  // ---- catalog (api §2.1-§2.6, §3) ----------------------------------------------------------

  upsertWorker(input: unknown): WorkerRecord {
    this.live();
    const req = parse(WorkerRequestSchema, input);
    return toRecord(this.reconcileWorker(req));
  }

  patchWorker(workerId: bigint, input: unknown): WorkerRecord {
    this.live();
    const patch = parse(WorkerPatchSchema, input);
    const existing = this.workers.get(workerId);
    if (!existing) throw workerNotFound(workerId);
    return toRecord(this.reconcileWorker(applyPatch(existing.req, patch)));
  }

  deleteWorker(workerId: bigint): WorkerRecord {
    const e = this.workers.get(workerId);
    if (!e) throw workerNotFound(workerId);
    e.lifecycle = 'draining';
    this.detach(e);
    e.lifecycle = 'unschedulable';
    this.workers.delete(workerId);
    return toRecord(e, 'unschedulable');
  }

  listWorkers(filter: FilterQuery | unknown = {}): WorkerRecord[] {
    const f = parse(FilterQuerySchema, filter);
    const out: WorkerRecord[] = [];
    for (const e of this.workers.values()) {
      if (f.model_name !== undefined && e.req.model_name !== f.model_name) continue;
      if (f.routing_group !== undefined && e.req.routing_group !== f.routing_group) continue;
      out.push(toRecord(e));
    }
    return out.sort(compareRecords);
  }

  ready(): ReadyResponse {
    let n = 0;
    for (const e of this.workers.values()) if (e.lifecycle === 'schedulable') n++;
    return { ready: !this.shutdownFlag && n > 0, schedulable_workers: n, workers: this.listWorkers() };
  }

  /** Apply a full worker record: partition move, reasons, partition creation, rank diff, listeners. */
  private reconcileWorker(req: WorkerRequest): WorkerEntry {
    const key = partitionKeyOf(req.model_name, req.routing_group);
    const prev = this.workers.get(req.worker_id);
    const entry: WorkerEntry = { req, lifecycle: 'incomplete', reasons: [], partitionKey: null };
    const oldRanks = prev && prev.partitionKey === key ? new Set(ranksOf(prev.req)) : null;
    if (prev && prev.partitionKey !== null && prev.partitionKey !== key) this.detach(prev);

    const reasons = metadataReasons(req, { queueing: this.queueing, kvEvents: this.config.useKvEvents });
    let part: Partition | null = null;
    if (reasons.length === 0) {
      try {
        part = this.ensurePartition(req.model_name, req.routing_group, req.block_size as number, req.is_eagle ?? false);
      } catch (err) {
        reasons.push(`reconciliation failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (part && this.feed && this.config.useKvEvents) {
      try {
        this.feed.reconcile(part, req.worker_id, eventEndpoints(req), req.replay_endpoint ?? null);
      } catch (err) {
        reasons.push(`reconciliation failed: ${err instanceof Error ? err.message : String(err)}`);
        part = null;
      }
    }
    entry.reasons = reasons;
    if (!part || reasons.length > 0) {
      if (prev && prev.partitionKey !== null) this.detach(prev);
      this.workers.set(req.worker_id, entry);
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
    this.workers.set(req.worker_id, entry);
    this.drain(part);
    return entry;
  }

  /** Remove a worker from its partition: listeners, blocks, bookings, reservation rows. */
  private detach(e: WorkerEntry): void {
    if (e.partitionKey === null) return;
    const part = this.partitions.get(e.partitionKey);
    e.partitionKey = null;
    if (!part) return;
    part.removeWorker(e.req.worker_id);
    if (this.feed && this.config.useKvEvents) this.feed.detach(e.req.worker_id);
    for (const r of part.loads.ranks()) if (r.workerId === e.req.worker_id) this.dropRank(part, r.workerId, r.dpRank);
    part.index.removeWorker(e.req.worker_id);
    this.drain(part);
  }

  private dropRank(part: Partition, workerId: bigint, dpRank: number): void {
    for (const id of part.loads.removeRank(workerId, dpRank)) this.removeRow(id);
    for (const id of this.reservations.idsOfWorker(workerId, dpRank)) {
      const row = this.reservations.lookup(id);
      if (row && row.partitionKey === part.key) this.removeRow(id);
    }
    if (!this.feed || !this.config.useKvEvents) part.index.removeRank(workerId, dpRank);
    part.approx?.removeRank(workerId, dpRank);
    part.predicted?.removeRank(workerId, dpRank);
  }

  /** Removes a reservation row and releases its session lease (the binding starts idling). */
  private removeRow(id: string): void {
    const row = this.reservations.remove(id);
    if (row) this.releaseLease(row);
  }

  private releaseLease(row: { partitionKey: string; lease?: AffinityLease }): void {
    if (row.lease) this.partitions.get(row.partitionKey)?.affinity?.release(row.lease);
  }

  // ---- readiness helpers ------------------------------------------------------------------

  /** The partition of a request, or the spec's 503. */
  private readyPartition(model: string, group: string): Partition {
    const part = this.partitions.get(partitionKeyOf(model, group));
    if (part && part.schedulableCount() > 0) return part;
    for (const e of this.workers.values()) if (e.lifecycle === 'schedulable') throw noSchedulableWorkersFor(model, group);
    throw noSchedulableWorkers();
  }

  // ---- selection (api §2.7, §2.8; algorithms §5) ---------------------------------------------

  async select(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> {
    this.live();
    const req = parse(SelectRequestSchema, input);
    checkPromptFields(req);
    const part = this.readyPartition(req.model_name, req.routing_group);
    const eff = applyOverride(this.config, req.router_config_override);
    const prompt = this.normalizer.normalize(req, part, eff.assumeKvReuse);
    const finish = (choice: Choice): SelectResponse => {
      if (req.selection_id !== undefined) {
        this.pending.insert(req.model_name, req.routing_group, req.selection_id, {
          workerId: choice.entry.req.worker_id, dpRank: choice.dpRank,
          sequenceHashes: prompt.seq, blockHashes: prompt.locals,
          islTokens: prompt.isl, effectivePrefillTokens: choice.effectivePrefillTokens,
          expectedOutputTokens: req.expected_output_tokens, trackPrefillTokens: eff.trackPrefillTokens,
          loraName: req.lora_name, sessionId: req.session_context?.session_id ?? req.session_id,
        });
      }
      const res = this.response(choice, req.selection_id);
      if (req.advisory) {
        const w = choice.entry.req;
        const cap = w.max_num_batched_tokens ?? null;
        res.worker_load = { active_prefill_tokens: choice.activePrefillTokens, prefill_token_capacity: cap };
        if (w.total_kv_blocks !== undefined) res.worker_load.total_kv_blocks = w.total_kv_blocks;
        const t = this.config.conditionalDisaggPrefillBusyThreshold;
        if (t !== null && cap !== null) res.worker_load.prefill_busy = choice.activePrefillTokens > t * cap;
      }
      return res;
    };
    // query-only: a live binding steers, none is created (api §8)
    const sid = this.steerableSession(part, req);
    const bound = sid === undefined ? undefined : part.affinity?.query(sid);
    const steer = bound && part.targetLive(bound) ? bound : undefined;
    if (req.advisory) return finish(this.schedule(part, req, prompt, eff, undefined, steer));
    return this.admit(part, req, prompt, eff, opts, steer, (cache) => finish(this.schedule(part, req, prompt, eff, cache, steer)), () => {});
  }

  /**
   * The session a request steers by, when affinity is on: `session_context.session_id` wins over
   * `session_id`; an explicit `affinity_target` or `pinned_worker` skips steering (api §8).
   */
  private steerableSession(part: Partition, req: SelectAndReserveRequest): string | undefined {
    if (!part.affinity || req.affinity_target || req.pinned_worker) return undefined;
    return req.session_context?.session_id ?? req.session_id;
  }

  /**
   * Holds a session for a booking: waits out another booking's initialization, re-initializes a
   * binding whose worker departed, and routes unpinned (null) when the table is full.
   */
  private async holdSession(part: Partition, sessionId: string | undefined): Promise<Hold | null> {
    const table = part.affinity;
    if (!table || sessionId === undefined) return null;
    for (;;) {
      const h = table.acquire(sessionId);
      if (h.kind === 'wait') {
        await h.settled;
        if (this.shutdownFlag) throw shuttingDown();
        continue;
      }
      if (h.kind === 'full') return null;
      if (h.kind === 'bound' && !part.targetLive(h.target)) { table.invalidate(h.lease); continue; }
      return h;
    }
  }

  /** Commits a held session to the booked rank (400 in hard mode when it went elsewhere). */
  private commitSession(part: Partition, hold: Hold | null, workerId: bigint, dpRank: number): AffinityLease | undefined {
    if (!hold || !part.affinity) return undefined;
    return part.affinity.commit(hold, { workerId, dpRank }) ?? undefined;
  }

  async selectAndReserve(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> {
    this.live();
    const req: SelectAndReserveRequest = parse(SelectAndReserveRequestSchema, input);
    checkPromptFields(req);
    const part = this.readyPartition(req.model_name, req.routing_group);
    const eff = applyOverride(this.config, req.router_config_override);
    const prompt = this.normalizer.normalize(req, part, eff.assumeKvReuse);
    const id = req.selection_id ?? this.uuid();
    const claim = this.reservations.claim(id, part.key);
    let hold: Hold | null;
    try {
      hold = await this.holdSession(part, this.steerableSession(part, req));
    } catch (err) {
      this.reservations.release(claim);
      throw err;
    }
    const steer = hold?.kind === 'bound' ? hold.target : undefined;
    const drop = (): void => {
      if (hold) part.affinity?.abandon(hold);
      this.reservations.release(claim);
    };
    const run = (cache?: Map<string, RankCache>): SelectResponse => {
      try {
        const choice = this.schedule(part, req, prompt, eff, cache, steer);
        const lease = this.commitSession(part, hold, choice.entry.req.worker_id, choice.dpRank);
        hold = null;
        try {
          this.book(choice, id, eff.trackPrefillTokens, choice.effectivePrefillTokens, req.expected_output_tokens, req.lora_name);
        } catch (err) {
          if (lease) part.affinity?.release(lease);
          throw err;
        }
        this.reservations.commit(claim, choice.entry.req.worker_id, choice.dpRank, lease);
        const res = this.response(choice, id);
        res.sequence_hashes = Array.from(prompt.seq, (h) => BigInt.asIntN(64, h));
        res.isl_tokens = prompt.isl;
        res.track_prefill_tokens = eff.trackPrefillTokens;
        const hint = this.kvHint(choice, id);
        if (hint) res.kv_hint = hint;
        return res;
      } catch (err) {
        drop();
        throw err;
      }
    };
    return this.admit(part, req, prompt, eff, opts, steer, run, drop);
  }

  /**
   * Admission (algorithms §7): with queueing on for the request's class, a request waits when the
   * class has a backlog or every eligible rank is busy; otherwise it runs at once. A waiter runs
   * when a dequeue finds its eligible ranks not all busy; its cached overlap is reused unless it
   * waited longer than `DYN_ROUTER_OVERLAP_REFRESH_AFTER_SECS` (then it is re-queried). A queue
   * limit rejects with 429 and `details`. `onDrop` undoes the caller's claim when the waiter is
   * dropped without running (abort, shutdown).
   */
  private admit<R>(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues,
    opts: SelectOptions, steer: AffinityTarget | undefined, run: (cache?: Map<string, RankCache>) => R, onDrop: () => void): Promise<R> {
    if (!this.queueing) return Promise.resolve().then(() => run());
    const cache = this.overlapCache(part, prompt, eff);
    const infos = this.rankInfos(part, prompt, eff, cache);
    const kept = this.eligibleOf(infos, req, steer);
    let best = 0;
    for (const c of kept) best = Math.max(best, c.cachedTokens);
    const uncached = Math.max(prompt.isl - best, 0);
    const cls = part.queue.profile.resolve(opts.policyClass, uncached);
    const cfg = part.queue.classConfig(cls);
    if (!classQueues(cfg) || (!part.queue.hasBacklog(cls) && !this.poolBusy(cfg, kept))) {
      return Promise.resolve().then(() => run(cache));
    }
    const rej = part.queue.rejection(cls, part.schedulableCount());
    if (rej) {
      onDrop();
      return Promise.reject(queueRejected(rej));
    }
    if (opts.signal?.aborted) {
      // the client went away before the request could queue: it never waits, nothing books
      onDrop();
      return Promise.reject(new SelectionError('SEL_INTERNAL', 'request cancelled by the client'));
    }
    const enqueuedAt = this.clock.now();
    return new Promise<R>((resolve, reject) => {
      const onAbort = (): void => {
        if (part.queue.remove(waiter)) waiter.fail(new SelectionError('SEL_INTERNAL', 'request cancelled by the client'));
      };
      const waiter: Waiter = {
        canRun: () => this.poolBusy(cfg, this.eligibleOf(this.rankInfos(part, prompt, eff, cache), req, steer)) === false,
        run: () => {
          opts.signal?.removeEventListener('abort', onAbort);
          const refresh = this.config.overlapRefreshAfterSecs;
          const stale = refresh > 0 && this.clock.now() - enqueuedAt > refresh * MS;
          if (this.eligibleOf(this.rankInfos(part, prompt, eff, cache), req, steer).length === 0) {
            const pin = req.pinned_worker ?? req.affinity_target;
            onDrop();
            reject(noLongerSchedulable(pin?.worker_id ?? 0n, pin?.dp_rank ?? 0, part.modelName, part.routingGroup));
            return;
          }
          try {
            resolve(run(stale ? undefined : cache));
          } catch (err) {
            reject(err);
          }
        },
        fail: (err) => { opts.signal?.removeEventListener('abort', onAbort); onDrop(); reject(err); },
      };
      part.queue.enqueue(cls, {
        strictPriority: req.strict_priority ?? 0, priorityJump: req.priority_jump ?? 0,
        schedulingCostTokens: Math.max(uncached, 1), islTokens: prompt.isl, cachedTokens: best, payload: waiter,
      });
      opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private poolBusy(cfg: PolicyClassConfig, kept: readonly Candidate[]): boolean {
    let busy = 0;
    for (const c of kept) if (rankIsBusy(cfg, c.activePrefillTokens, c.maxNumBatchedTokens)) busy++;
    return poolIsBusy(cfg, busy, kept.length);
  }

  /** Admit waiters of a partition while their heads can run (after load drops, worker changes, rechecks). */
  private drain(part: Partition): void {
    if (!this.queueing) return;
    for (;;) {
      const next = part.queue.pop((w) => w.canRun());
      if (!next) return;
      next.payload.run();
    }
  }

  /**
   * The request's eligible ranks; a session target (`steer`) narrows them to the bound worker
   * (and rank) while it is among them (api §8: hard mode then rejects a dispatch elsewhere).
   */
  private eligibleOf(infos: readonly RankInfo[], req: SelectAndReserveRequest, steer?: AffinityTarget): Candidate[] {
    const kept = this.eligibleByRequest(infos, req);
    if (!steer) return kept;
    const narrowed = kept.filter((c) => c.workerId === steer.workerId && (steer.dpRank === null || c.dpRank === steer.dpRank));
    return narrowed.length > 0 ? narrowed : kept;
  }

  private eligibleByRequest(infos: readonly RankInfo[], req: SelectAndReserveRequest): Candidate[] {
    return eligible(infos.map((i) => i.cand), {
      allowedWorkerIds: req.allowed_worker_ids,
      requiredTaints: req.routing_constraints.required_taints,
      pinned: req.pinned_worker ? { workerId: req.pinned_worker.worker_id, dpRank: req.pinned_worker.dp_rank } : undefined,
      affinityTarget: req.affinity_target ? { workerId: req.affinity_target.worker_id, dpRank: req.affinity_target.dp_rank } : undefined,
    });
  }

  /** Scheduling of one request: candidates, filters, cost or policy, pick. Books nothing. */
  private schedule(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues,
    cache?: Map<string, RankCache>, steer?: AffinityTarget): Choice {
    const infos = this.rankInfos(part, prompt, eff, cache);
    const kept = this.eligibleOf(infos, req, steer);
    if (kept.length === 0) throw noEndpoints();
    let pick: number;
    if (part.policy) {
      const views = kept.map((c) => new CandidateRowView(c));
      pick = runPolicy(part.policy, this.policyContext(part, req, prompt, eff), views, this.rng);
    } else {
      const costs = defaultCosts(kept, {
        blockSize: part.blockSize, islTokens: prompt.isl, trackPrefillTokens: eff.trackPrefillTokens,
        overlapScoreCredit: eff.overlapScoreCredit, overlapScoreCreditDecay: this.config.overlapScoreCreditDecay,
        prefillLoadScale: eff.prefillLoadScale, decodeActiveRequestWeight: this.config.decodeActiveRequestWeight,
        hostCacheHitWeight: this.config.hostCacheHitWeight, diskCacheHitWeight: this.config.diskCacheHitWeight,
        sharedCacheMultiplier: eff.sharedCacheMultiplier, preferredTaints: req.routing_constraints.preferred_taints,
      });
      pick = pickByCost(costs, kept.length, eff.routerTemperature, this.rng);
    }
    const c = kept[pick];
    const entry = part.workers.get(c.workerId) as WorkerEntry;
    // overlap summary over the chosen worker's ranks (api §2.7)
    const dp: Record<string, number> = {};
    let gpu = 0, cpu = 0, disk = 0;
    for (const i of infos) {
      if (i.cand.workerId !== c.workerId) continue;
      const d = i.cand.deviceBlocks, h = d + i.cand.hostExtBlocks, k = h + i.cand.diskExtBlocks;
      dp[String(i.cand.dpRank)] = d * part.blockSize;
      gpu = Math.max(gpu, d); cpu = Math.max(cpu, h); disk = Math.max(disk, k);
    }
    const bs = part.blockSize;
    const overlap: OverlapSummary = { longest_matched: Math.max(gpu, cpu, disk) * bs, gpu: gpu * bs, dp, cpu: cpu * bs, disk: disk * bs };
    const untracked = Math.max(0, Math.ceil(prompt.isl / bs) - prompt.nBlocks);
    return {
      part, entry, dpRank: c.dpRank, prompt, eff, overlap, cachedTokens: c.cachedTokens,
      effectivePrefillTokens: prompt.isl - Math.min(c.cachedTokens, prompt.isl),
      potentialDecodeBlocks: c.potentialDecodeBlocks + untracked,
      activePrefillTokens: c.activePrefillTokens,
    };
  }

  /** The index's tiered overlap of a prompt per rank (`"worker:rank"` keys). */
  private overlapCache(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues): Map<string, RankCache> {
    const byRank = new Map<string, RankCache>();
    if (prompt.locals && prompt.locals.length > 0) {
      const w = {
        overlapScoreCredit: eff.overlapScoreCredit, hostCacheHitWeight: this.config.hostCacheHitWeight,
        diskCacheHitWeight: this.config.diskCacheHitWeight,
      };
      let rows = part.index.match(prompt.locals, prompt.isl, w);
      if (part.predicted) {
        rows = mergeOverlapMax(rows, part.predicted.index.match(prompt.locals, prompt.isl, w));
      }
      for (const o of rows) byRank.set(o.key, o);
    }
    return byRank;
  }

  /** Candidate rows of every schedulable rank: tiered overlap + load projection. */
  private rankInfos(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues, cache?: Map<string, RankCache>): RankInfo[] {
    const ranks = part.schedulableRanks();
    const byRank = cache ?? this.overlapCache(part, prompt, eff);
    const out: RankInfo[] = new Array(ranks.length);
    for (let i = 0; i < ranks.length; i++) {
      const { entry, dpRank, key } = ranks[i];
      const w = entry.req.worker_id;
      const o = byRank.get(key);
      const load = part.loads.loadOf(key);
      const depth = prompt.nBlocks > 0 ? part.loads.depthOf(key, prompt.seqWords, prompt.nBlocks) : 0;
      out[i] = {
        entry,
        cand: {
          workerId: w, dpRank, taints: entry.req.taints,
          deviceBlocks: o?.device ?? 0, hostExtBlocks: o?.hostExt ?? 0, diskExtBlocks: (o?.diskExt ?? 0) + (o?.externalExt ?? 0),
          sharedBeyondDeviceBlocks: 0, cachedTokens: o?.cachedTokens ?? 0,
          hasLoad: true, activePrefillTokens: load.activePrefillTokens,
          potentialDecodeBlocks: load.activeDecodeBlocks + Math.max(0, prompt.nBlocks - depth),
          activeRequests: load.activeRequests,
          totalKvBlocks: entry.req.total_kv_blocks ?? null, maxNumBatchedTokens: entry.req.max_num_batched_tokens ?? null,
        },
      };
    }
    return out;
  }

  private policyContext(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues): WorkerSelectionContext {
    return selectionContext({
      promptTokens: prompt.isl, blockSize: part.blockSize, tracksPrefillTokens: eff.trackPrefillTokens,
      modelName: part.modelName, routingGroup: part.routingGroup,
      sessionContext: req.session_context, sessionId: req.session_id,
      affinityTarget: req.affinity_target ? { workerId: req.affinity_target.worker_id, dpRank: req.affinity_target.dp_rank } : undefined,
      expectedOutputTokens: req.expected_output_tokens, priorityJump: req.priority_jump, strictPriority: req.strict_priority,
      routerOverride: req.router_config_override ?? {}, preferredTaints: req.routing_constraints.preferred_taints,
    });
  }

  private response(c: Choice, selectionId: string | undefined): SelectResponse {
    const w = c.entry.req;
    const res: SelectResponse = {
      model_name: c.part.modelName, routing_group: c.part.routingGroup,
      worker_id: w.worker_id, dp_rank: c.dpRank, endpoint: w.endpoint ?? '', block_size: c.part.blockSize,
      overlap: c.overlap, effective_prefill_tokens: c.effectivePrefillTokens, potential_decode_blocks: c.potentialDecodeBlocks,
    };
    if (selectionId !== undefined) res.selection_id = selectionId;
    const t = this.config.conditionalDisaggDecodeBusyThreshold;
    if (t !== null && w.total_kv_blocks !== undefined) res.decode_busy = c.potentialDecodeBlocks > t * w.total_kv_blocks;
    // keep selection_id first in the JSON, as Dynamo's struct order does
    return selectionId === undefined ? res : { selection_id: selectionId, ...res };
  }

  /** Book a choice under `id` (the claim is the caller's). */
  private book(c: Choice, id: string, track: boolean, prefillTokens: number, expectedOutputTokens: number | undefined, loraName: string | undefined): void {
    const w = c.entry.req.worker_id;
    const ok = c.part.loads.book(id, w, c.dpRank, {
      seq: c.prompt.seqWords, nBlocks: c.prompt.nBlocks, trackPrefillTokens: track, prefillTokens,
      expectedOutputTokens, islTokens: c.prompt.isl, loraName,
    });
    if (!ok) throw new SelectionError('SEL_SEQUENCE_DUPLICATE_REQUEST', `request ${id} is already booked`);
    // approximate / predicted indexing records bookings with routing hashes (never hash-only ones)
    const locals = c.prompt.locals;
    if (locals && locals.length > 0) c.part.recorder()?.record(w, c.dpRank, locals);
    this.hooks.onLifecycle?.({
      modelName: c.part.modelName, routingGroup: c.part.routingGroup, blockSize: c.part.blockSize, requestId: id,
      workerId: w, dpRank: c.dpRank, loraName, kind: 'add', seq: c.prompt.seq, trackPrefillTokens: track,
      expectedOutputTokens, prefillTokens: track ? prefillTokens : 0,
    });
  }

  /** kv_hint of a booking (api §9): only with the local event-driven primary and hint-capable workers. */
  private kvHint(c: Choice, id: string): KvHint | undefined {
    if (!this.config.useKvEvents || this.config.routerPredictedTtlSecs !== null || this.config.useRemoteIndexer) return undefined;
    if (!c.prompt.locals || c.prompt.locals.length === 0 || !hintCapable(c.part.workers.values())) return undefined;
    const depth = Number(c.overlap.dp[String(c.dpRank)] ?? 0) / c.part.blockSize;
    return buildKvHint(c.part.index, c.part.workers.values(), { workerId: c.entry.req.worker_id, dpRank: c.dpRank },
      c.entry.req.router_hint_worker_type, depth, c.prompt.locals, id);
  }

  private uuid(): string {
    const a = this.rng.u64(), b = this.rng.u64();
    const hex = ((a << 64n) | b).toString(16).padStart(32, '0').split('');
    hex[12] = '4';
    hex[16] = '89ab'[parseInt(hex[16], 16) & 3];
    const s = hex.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }

  // ---- reservations (api §2.9-§2.12, §5) ---------------------------------------------------

  async createReservation(input: unknown): Promise<ReservationResponse> {
    this.live();
    const req = parse(ReservationRequestSchema, input);
    const { model_name: model, routing_group: group, selection_id: id } = req;
    if (req.worker_id === undefined) return this.replayReservation(model, group, id);

    // explicit form: the cached selection is discarded first
    this.pending.discard(model, group, id);
    checkPromptFields(req, false);
    const part = this.readyPartition(model, group);
    const eff = applyOverride(this.config, req.router_config_override);
    const prompt = this.normalizer.normalize(req, part, eff.assumeKvReuse);
    if (req.effective_prefill_tokens !== undefined && req.effective_prefill_tokens > prompt.isl) {
      throw effectivePrefillExceedsIsl(req.effective_prefill_tokens, prompt.isl);
    }
    const dpRank = req.dp_rank ?? 0;
    const entry = part.isSchedulable(req.worker_id, dpRank);
    if (!entry) throw schedulableWorkerNotFound(req.worker_id, model, group);
    const track = req.track_prefill_tokens ?? (req.effective_prefill_tokens !== undefined ? true : eff.trackPrefillTokens);
    const claim = this.reservations.claim(id, part.key);
    try {
      let effective = req.effective_prefill_tokens;
      if (effective === undefined) {
        const info = prompt.locals && prompt.locals.length > 0
          ? this.rankInfos(part, prompt, eff).find((i) => i.cand.workerId === req.worker_id && i.cand.dpRank === dpRank) : undefined;
        effective = prompt.isl - Math.min(info?.cand.cachedTokens ?? 0, prompt.isl);
      }
      const choice = this.fixedChoice(part, entry, dpRank, prompt, eff);
      this.book(choice, id, track, effective, req.expected_output_tokens, req.lora_name);
      this.reservations.commit(claim, req.worker_id, dpRank);
    } catch (err) {
      this.reservations.release(claim);
      throw err;
    }
    return { selection_id: id, model_name: model, routing_group: group, worker_id: req.worker_id, dp_rank: dpRank, endpoint: entry.req.endpoint ?? '' };
  }

  /** Replay form (api §5.2): book only the cached inputs; failures keep the entry. */
  private async replayReservation(model: string, group: string, id: string): Promise<ReservationResponse> {
    const hit = this.pending.peek(model, group, id);
    if (!hit) throw pendingNotFound(id, model, group);
    const v = hit.value;
    const part = this.readyPartition(model, group);
    const entry = part.isSchedulable(v.workerId, v.dpRank);
    if (!entry) throw schedulableWorkerNotFound(v.workerId, model, group, v.dpRank);
    const claim = this.reservations.claim(id, part.key);
    let hold: Hold | null = null;
    try {
      // the cached session binds like /select_and_reserve: hold, commit to the cached rank, book
      hold = await this.holdSession(part, v.sessionId);
      if (!part.isSchedulable(v.workerId, v.dpRank)) throw schedulableWorkerNotFound(v.workerId, model, group, v.dpRank);
      let lease: AffinityLease | undefined;
      try {
        lease = this.commitSession(part, hold, v.workerId, v.dpRank);
      } catch (err) {
        hold = null;
        // an affinity rejection consumes the cached selection (api §5.2)
        this.pending.removeIfGeneration(model, group, id, hit.generation);
        throw err;
      }
      hold = null;
      const seq = v.sequenceHashes;
      const prompt: NormalizedPrompt = {
        isl: v.islTokens, nBlocks: seq.length, locals: v.blockHashes, seq,
        seqWords: new Uint32Array(seq.buffer, seq.byteOffset, seq.length * 2), loraName: v.loraName, fromHashes: true,
      };
      const eff = applyOverride(this.config, null);
      const choice = this.fixedChoice(part, entry, v.dpRank, prompt, eff);
      try {
        this.book(choice, id, v.trackPrefillTokens, v.effectivePrefillTokens, v.expectedOutputTokens, v.loraName);
      } catch (err) {
        if (lease) part.affinity?.release(lease);
        throw err;
      }
      this.reservations.commit(claim, v.workerId, v.dpRank, lease);
    } catch (err) {
      if (hold) part.affinity?.abandon(hold);
      this.reservations.release(claim);
      throw err;
    }
    this.pending.removeIfGeneration(model, group, id, hit.generation);
    return { selection_id: id, model_name: model, routing_group: group, worker_id: v.workerId, dp_rank: v.dpRank, endpoint: entry.req.endpoint ?? '' };
  }

  /** A Choice for a fixed worker rank (explicit and replayed bookings). */
  private fixedChoice(part: Partition, entry: WorkerEntry, dpRank: number, prompt: NormalizedPrompt, eff: EffectiveRouterValues): Choice {
    return {
      part, entry, dpRank, prompt, eff, overlap: { longest_matched: 0, gpu: 0, dp: {}, cpu: 0, disk: 0 },
      cachedTokens: 0, effectivePrefillTokens: 0, potentialDecodeBlocks: 0, activePrefillTokens: 0,
    };
  }

  /** The live booking of a reservation id, or 404. */
  private booking(id: string): { part: Partition; workerId: bigint; dpRank: number } {
    const row = this.reservations.lookup(id);
    const part = row ? this.partitions.get(row.partitionKey) : undefined;
    if (!row || !part || !part.loads.has(id)) throw reservationNotFound(id);
    return { part, workerId: row.workerId, dpRank: row.dpRank };
  }

  prefillComplete(reservationId: string): StatusOk {
    this.live();
    const b = this.booking(reservationId);
    b.part.loads.prefillComplete(reservationId);
    this.hooks.onLifecycle?.({
      modelName: b.part.modelName, routingGroup: b.part.routingGroup, blockSize: b.part.blockSize,
      requestId: reservationId, workerId: b.workerId, dpRank: b.dpRank, kind: 'prefill_complete',
    });
    this.drain(b.part);
    return { status: 'ok' };
  }

  addOutputBlock(reservationId: string, body: unknown): StatusOk {
    this.live();
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new SelectionError('SEL_UNPROCESSABLE', 'Failed to deserialize the JSON body into the target type: expected a JSON object');
    }
    const req = parse(OutputBlockRequestSchema, body);
    const f = req.decay_fraction;
    if (f !== undefined && !(f >= 0 && f <= 1)) throw decayFractionOutOfRange();
    const b = this.booking(reservationId);
    b.part.loads.addOutputBlock(reservationId, f);
    return { status: 'ok' };
  }

  freeReservation(reservationId: string): StatusOk {
    this.live();
    const b = this.booking(reservationId);
    b.part.loads.free(reservationId);
    this.removeRow(reservationId);
    this.hooks.onLifecycle?.({
      modelName: b.part.modelName, routingGroup: b.part.routingGroup, blockSize: b.part.blockSize,
      requestId: reservationId, workerId: b.workerId, dpRank: b.dpRank, kind: 'free',
    });
    this.drain(b.part);
    return { status: 'ok' };
  }

  // ---- replica sync (api §6) ---------------------------------------------------------------

  /**
   * Applies a lifecycle event from a replica peer. Dropped (false): unknown partition, block-size
   * mismatch, a worker rank not registered (schedulable) here, an id claimed in flight here or
   * booked in another partition. A peer admission replaces a stale row of the same partition;
   * mirrored bookings are indexed, so lifecycle calls here resolve them. Nothing is re-published.
   */
  applyReplicaEvent(e: ReplicaLifecycle): boolean {
    const part = this.partitions.get(partitionKeyOf(e.modelName, e.routingGroup));
    if (!part || part.blockSize !== e.blockSize) return false;
    const id = e.requestId;
    if (e.kind === 'add') {
      if (!part.isSchedulable(e.workerId, e.dpRank)) return false;
      const st = this.reservations.state(id);
      if (st && (st.kind === 'claim' || st.partitionKey !== part.key)) return false;
      if (part.loads.has(id)) part.loads.free(id);
      const seq = BigUint64Array.from(e.seq ?? []);
      const ok = part.loads.book(id, e.workerId, e.dpRank, {
        seq: new Uint32Array(seq.buffer, seq.byteOffset, seq.length * 2), nBlocks: seq.length,
        trackPrefillTokens: e.trackPrefillTokens, prefillTokens: e.prefillTokens,
        expectedOutputTokens: e.expectedOutputTokens, islTokens: 0, loraName: e.loraName,
      });
      if (ok) {
        const prev = this.reservations.lookup(id);
        if (prev) this.releaseLease(prev);
        this.reservations.mirror(id, part.key, e.workerId, e.dpRank);
      }
      return ok;
    }
    const row = this.reservations.lookup(id);
    if (!row || row.partitionKey !== part.key || !part.loads.has(id)) return false;
    if (e.kind === 'prefill_complete') part.loads.prefillComplete(id);
    else {
      part.loads.free(id);
      this.removeRow(id);
    }
    this.drain(part);
    return true;
  }

  /**
   * Applies a peer's session binding (api §8 apply rules). Dropped (false) when affinity is off,
   * the partition is unknown, or the target worker is not in this partition's catalog.
   */
  applyAffinityEvent(e: AffinityEvent): boolean {
    if (e.writerId === this.replicaId) return false;
    const part = this.partitions.get(partitionKeyOf(e.modelName, e.routingGroup));
    if (!part?.affinity || !part.workers.has(e.workerId)) return false;
    const r = part.affinity.applyRemote(e.sessionId, { workerId: e.workerId, dpRank: e.dpRank },
      { sequence: e.sequence, writerId: e.writerId });
    return r === 'inserted' || r === 'refreshed' || r === 'replaced_expired' || r === 'replaced_newer';
  }

  // ---- inspection (api §2.13-§2.16) --------------------------------------------------------

  loads(filter: FilterQuery | unknown = {}): ModelLoadResponse[] {
    this.maintain();
    const f = parse(FilterQuerySchema, filter);
    const parts = [...this.partitions.values()]
      .filter((p) => (f.model_name === undefined || p.modelName === f.model_name) && (f.routing_group === undefined || p.routingGroup === f.routing_group))
      .sort((a, b) => (a.modelName !== b.modelName ? (a.modelName < b.modelName ? -1 : 1) : a.routingGroup < b.routingGroup ? -1 : a.routingGroup > b.routingGroup ? 1 : 0));
    return parts.map((p) => ({
      model_name: p.modelName, routing_group: p.routingGroup,
      loads: p.schedulableRanks().map(({ entry, dpRank }): PotentialLoad => {
        const l = p.loads.rankLoad(entry.req.worker_id, dpRank);
        return {
          worker_id: entry.req.worker_id, dp_rank: dpRank, potential_prefill_tokens: l.activePrefillTokens,
          potential_decode_blocks: l.activeDecodeBlocks, active_requests: l.activeRequests,
        };
      }),
      pending_count: p.queue.pending().count, pending_isl_tokens: p.queue.pending().islTokens,
    }));
  }

  potentialLoads(input: unknown): PotentialLoad[] {
    this.live();
    const { part, prompt, eff } = this.promptQuery(input);
    const bs = part.blockSize;
    const untracked = Math.max(0, Math.ceil(prompt.isl / bs) - prompt.nBlocks);
    return this.rankInfos(part, prompt, eff).map(({ cand: c }) => ({
      worker_id: c.workerId, dp_rank: c.dpRank,
      potential_prefill_tokens: c.activePrefillTokens + (eff.trackPrefillTokens ? prompt.isl - Math.min(c.cachedTokens, prompt.isl) : 0),
      potential_decode_blocks: c.potentialDecodeBlocks + untracked,
      active_requests: c.activeRequests,
    }));
  }

  overlapScores(input: unknown): OverlapScoresResponse {
    this.live();
    const { part, prompt, eff } = this.promptQuery(input);
    const ranks = part.schedulableRanks().map(({ entry, dpRank }) => ({ workerId: entry.req.worker_id, dpRank }));
    const rows = part.index.overlapRows(prompt.locals ?? [], ranks, {
      overlapScoreCredit: eff.overlapScoreCredit, hostCacheHitWeight: this.config.hostCacheHitWeight,
      diskCacheHitWeight: this.config.diskCacheHitWeight, sharedCacheMultiplier: eff.sharedCacheMultiplier,
    });
    return {
      block_size: part.blockSize, num_blocks: prompt.nBlocks, workers: rows,
      shared_cache: { enabled: false, total_hit_blocks: 0, ranges: [], error: null },
    };
  }

  private promptQuery(input: unknown): { part: Partition; prompt: NormalizedPrompt; eff: EffectiveRouterValues } {
    const req = parse(PromptQuerySchema, input);
    checkPromptFields(req as PromptFields);
    const part = this.readyPartition(req.model_name, req.routing_group);
    const eff = applyOverride(this.config, req.router_config_override);
    return { part, prompt: this.normalizer.normalize(req, part, eff.assumeKvReuse), eff };
  }

  dump(): DumpResponse {
    const out: DumpResponse = {};
    const parts = [...this.partitions.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const p of parts) {
      try {
        out[`${p.modelName}:${p.routingGroup}`] = { block_size: p.blockSize, events: p.index.dumpEvents() };
      } catch (err) {
        out[`${p.modelName}:${p.routingGroup}`] = { error: err instanceof Error ? err.message : String(err) };
      }
    }
    return out;
  }

  /**
   * Load a dump (api §7.2): each `"model:group"` key split at the first ':' gets its partition
   * (created with the dump's block size when new) and its events applied. Returns events applied.
   */
  loadDump(dump: Readonly<Record<string, { block_size: number; events: readonly RouterEvent[] }>>): number {
    let n = 0;
    for (const [key, v] of Object.entries(dump)) {
      const at = key.indexOf(':');
      if (at < 0) throw new Error(`malformed dump key "${key}"`);
      const part = this.ensurePartitionForDump(key.slice(0, at), key.slice(at + 1), v.block_size);
      n += part.index.loadEvents(v.events);
    }
    return n;
  }

  private ensurePartitionForDump(model: string, group: string, blockSize: number): Partition {
    const p = this.partitions.get(partitionKeyOf(model, group));
    return p ?? this.ensurePartition(model, group, blockSize, false);
  }

  /** Schedulable worker ids sorted (for tests and the simulator). */
  schedulableWorkerIds(): bigint[] {
    return [...this.workers.values()].filter((e) => e.lifecycle === 'schedulable').map((e) => e.req.worker_id).sort(cmpBig);
  }
}

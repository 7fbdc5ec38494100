/**
 * The worker catalog half of a {@link SelectionCore}: the workers by id, their partitions (one per
 * `(model_name, routing_group)`, created by the first valid worker and destroyed when the last one
 * leaves), and the catalog operations — upsert (replaces the record; may move it between
 * partitions), patch (present fields only, never a move), delete, list and readiness — with the
 * reconcile of one record against its partition: schedulability reasons, partition creation, rank
 * diff, KV-event listeners.
 *
 * Before a record changes anything it is admitted: every endpoint it names must pass the
 * `--allowed-endpoints` policy (422 naming the field and the endpoint), and a record that would
 * create a partition needs room under `--max-partitions` (429).
 *
 * SelectionCore extends it with selection and booking; the two hooks below are where a catalog
 * change reaches them (bookings of a dropped rank are released, the admission queue re-checked).
 */
import type * as z from 'zod';
import { ConfigError, LIMITS, queueingEnabled, type RouterConfig } from '../config/config.js';
import {
  SelectionError, noEndpoints, noSchedulableWorkersFor, partitionLabel, partitionLimit, shuttingDown, workerNotFound,
  type ReservationEnd,
} from '../errors.js';
import { FilterQuerySchema, WorkerPatchSchema, WorkerRequestSchema, parseBody, type FilterQuery, type WorkerRequest } from '../wire/schemas.js';
import type { Lifecycle, ReadyResponse, WorkerRecord } from '../wire/types.js';
import type { IndexFeed } from '../index/feed.js';
import { policyConfigQueues, resolveProfile, type RouterPolicyConfig } from '../select/policy-config.js';
import type { PolicyRegistry, WorkerSelectionPolicy } from '../select/policy.js';
import { parseRoutingPolicy } from '../select/routing-policy.js';
import { createRoutingPolicy } from '../select/named-policies.js';
import type { TtftModel } from '../load/ttft-model.js';
import { AdmissionQueue, type Waiter } from '../select/queue.js';
import { SessionAffinityTable } from '../booking/affinity.js';
import type { CoreHooks, CoreLimits, CoreOptions, EndpointPolicy, SessionAffinityConfig } from '../options.js';
import { systemClock, type Clock, type Rng } from '../random.js';
import {
  applyPatch, compareRecords, countFeedStates, eventEndpoints, failedFeeds, metadataReasons, partitionKeyOf, ranksOf, toRecord,
  type WorkerEntry,
} from './catalog.js';
import { Partition } from './partition.js';
import { lookupFacts } from './lookup.js';
import type { PrefillDone } from '../load/loads.js';

/** Why a worker rank left its partition (`removed`: DELETE; `rank`: its record dropped the rank; `left`: re-registered elsewhere or as incomplete). */
export type WorkerChange = Extract<ReservationEnd, { kind: 'worker' }>['change'];

export abstract class WorkerCatalog {
  readonly config: RouterConfig;
  readonly clock: Clock;
  readonly rng: Rng;
  readonly hooks: CoreHooks;
  /** Queueing on: `router_queue_threshold` or a policy class that queues. */
  readonly queueing: boolean;
  /** This replica's id (replica-sync `router_id`, affinity `writer_id`). */
  readonly replicaId: bigint;
  /** Capacity limits in force (options over `LIMITS` defaults). */
  readonly limits: CoreLimits;
  /** Requests refused at a capacity limit, by limit (for metrics). */
  readonly limitRejections = { promptBlocks: 0, bookings: 0, partitions: 0 };
  protected readonly workers = new Map<bigint, WorkerEntry>();
  protected readonly partitions = new Map<string, Partition>();
  /** Set by shutdown: mutations and selections then fail. */
  protected closing = false;
  protected readonly feed: IndexFeed | null;
  private readonly policies: PolicyRegistry | null;
  private readonly policyParameters: Readonly<Record<string, unknown>>;
  private readonly policyConfig: RouterPolicyConfig | null;
  protected readonly affinity: SessionAffinityConfig | null;
  private readonly affinitySequenceStart: bigint;
  private readonly endpointPolicy: EndpointPolicy | null;

  protected constructor(config: RouterConfig, o: CoreOptions, rng: Rng) {
    this.config = config;
    this.clock = o.clock ?? systemClock;
    this.rng = rng;
    this.hooks = o.hooks ?? {};
    this.feed = o.feed ?? null;
    this.policies = o.policies ?? null;
    this.policyParameters = o.policyParameters ?? {};
    this.policyConfig = o.policyConfig ?? null;
    this.queueing = queueingEnabled(config, policyConfigQueues(this.policyConfig));
    this.replicaId = o.replicaId ?? (rng.u64() | 1n);
    this.affinity = o.sessionAffinity ?? null;
    this.affinitySequenceStart = o.affinitySequenceStart ?? BigInt(Date.now()) * 1_000_000n;
    this.limits = WorkerCatalog.resolveLimits(config, o);
    this.endpointPolicy = o.endpointPolicy ?? null;
  }

  /**
   * The capacity limits of `options` over the defaults; throws ConfigError (naming the flag) for
   * a value that is not a positive integer, or more partitions than the wasm index handles allow
   * (each partition holds one index, two with the predicted side index). The default prompt limit
   * is lower where bookings are also recorded into an index (approximate or predicted indexing):
   * recording costs several times the rest of a booking per block.
   */
  static resolveLimits(config: RouterConfig, options: CoreOptions): CoreLimits {
    const predicted = config.useKvEvents && config.routerPredictedTtlSecs !== null;
    const ceiling = Math.floor(LIMITS.wasmIndexHandles / (predicted ? 2 : 1));
    const l = options.limits ?? {};
    const limits: CoreLimits = {
      maxPromptBlocks: l.maxPromptBlocks
        ?? (predicted || !config.useKvEvents ? LIMITS.defaultMaxPromptBlocksRecorded : LIMITS.defaultMaxPromptBlocks),
      maxBookings: l.maxBookings ?? LIMITS.defaultMaxBookings,
      maxPartitions: l.maxPartitions ?? ceiling,
    };
    const problems: string[] = [];
    const check = (flag: string, v: number, max: number): void => {
      if (!(Number.isInteger(v) && v >= 1 && v <= max)) problems.push(`${flag}: must be an integer between 1 and ${max} (got ${v})`);
    };
    check('--max-prompt-blocks', limits.maxPromptBlocks, LIMITS.maxPromptItems);
    check('--max-bookings', limits.maxBookings, Number.MAX_SAFE_INTEGER);
    check('--max-partitions', limits.maxPartitions, ceiling);
    if (problems.length > 0) throw new ConfigError(problems);
    return Object.freeze(limits);
  }

  /** Runs due periodic work (the core's maintenance); every operation calls it first. */
  abstract maintain(): void;
  /** Releases the bookings (and reservation rows) of a rank that left its partition, remembering why (`change`). */
  protected abstract dropBookings(part: Partition, workerId: bigint, dpRank: number, change: WorkerChange): void;
  /** Admits queued requests of a partition that can run now (after a catalog change). */
  protected abstract drain(part: Partition): void;

  get shuttingDown(): boolean { return this.closing; }

  upsertWorker(input: unknown): WorkerRecord {
    const req = this.parse(WorkerRequestSchema, input);
    this.admit(req);
    return this.record(this.reconcileWorker(req));
  }

  /**
   * The checks {@link upsertWorker} runs before it changes anything (schema, endpoints, room for
   * a new partition), alone: a source applying many records checks them all first.
   */
  checkWorker(input: unknown): void {
    this.admit(this.parse(WorkerRequestSchema, input));
  }

  patchWorker(workerId: bigint, input: unknown): WorkerRecord {
    const patch = this.parse(WorkerPatchSchema, input);
    const existing = this.workers.get(workerId);
    if (!existing) throw workerNotFound(workerId);
    const req = applyPatch(existing.req, patch);
    this.admit(req);
    return this.record(this.reconcileWorker(req));
  }

  deleteWorker(workerId: bigint): WorkerRecord {
    const e = this.workers.get(workerId);
    if (!e) throw workerNotFound(workerId);
    e.lifecycle = 'draining';
    this.detach(e, 'removed');
    e.lifecycle = 'unschedulable';
    this.workers.delete(workerId);
    return this.record(e, 'unschedulable');
  }

  listWorkers(filter: FilterQuery | unknown = {}): WorkerRecord[] {
    const f = parseBody(FilterQuerySchema, filter);
    const out: WorkerRecord[] = [];
    for (const e of this.workers.values()) {
      if (f.model_name !== undefined && e.req.model_name !== f.model_name) continue;
      if (f.routing_group !== undefined && e.req.routing_group !== f.routing_group) continue;
      out.push(this.record(e));
    }
    return out.sort(compareRecords);
  }

  /** Readiness; with described KV feeds, `kv_feeds` counts the ranks of every worker per feed state. */
  ready(): ReadyResponse {
    let n = 0;
    for (const e of this.workers.values()) if (e.lifecycle === 'schedulable') n++;
    const workers = this.listWorkers();
    const res: ReadyResponse = { ready: !this.closing && n > 0, schedulable_workers: n, workers };
    if (this.describesFeeds) res.kv_feeds = countFeedStates(workers);
    return res;
  }

  /** A partition by model and group (hosts and simulations feed its index directly). */
  partition(modelName: string, routingGroup: string): Partition | undefined {
    return this.partitions.get(partitionKeyOf(modelName, routingGroup));
  }

  /** Every partition. */
  partitionList(): Partition[] { return [...this.partitions.values()]; }

  /** Schedulable worker ids sorted (for tests and the simulator). */
  schedulableWorkerIds(): bigint[] {
    return [...this.workers.values()].filter((e) => e.lifecycle === 'schedulable').map((e) => e.req.worker_id)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /**
   * Get or create a partition; a mismatching block size or eagle flag is a 409 SelectionError, no
   * room for another partition (`--max-partitions`, or no free wasm index handle) a 429.
   */
  ensurePartition(modelName: string, routingGroup: string, blockSize: number, isEagle: boolean): Partition {
    const key = partitionKeyOf(modelName, routingGroup);
    const p = this.partitions.get(key);
    if (p) {
      const label = partitionLabel(modelName, routingGroup);
      if (p.blockSize !== blockSize) throw new SelectionError('SEL_CONFLICT', `${label} has block_size ${p.blockSize}, but ${blockSize} was requested`);
      if (p.isEagle !== isEagle) throw new SelectionError('SEL_CONFLICT', `${label} has is_eagle ${p.isEagle}, but ${isEagle} was requested`);
      return p;
    }
    this.checkPartitionRoom(modelName, routingGroup, this.partitions.size);
    let created: Partition;
    try {
      created = this.createPartition(key, modelName, routingGroup, blockSize, isEagle);
    } catch (err) {
      if (!(err instanceof Error && /wasm index handle/.test(err.message))) throw err;
      this.limitRejections.partitions++;
      throw new SelectionError('SEL_PARTITION_LIMIT', `cannot create ${partitionLabel(modelName, routingGroup)}: every one of the `
        + `${LIMITS.wasmIndexHandles} wasm index handles of this process is in use (cores in one process share them)`);
    }
    this.partitions.set(key, created);
    return created;
  }

  /** The first step of every mutation and selection: refuse while shutting down, run due maintenance. */
  protected live(): void {
    if (this.closing) throw shuttingDown();
    this.maintain();
  }

  /** {@link live}, then the body against its schema (422 naming the field). */
  protected parse<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
    this.live();
    return parseBody(schema, input);
  }

  /**
   * The partition of a request, or the 503: Dynamo's text (naming the partition when other
   * workers are schedulable), then what was looked up (`input` is the raw body: whether
   * `model_name` was given) and what the catalog holds instead.
   */
  protected readyPartition(model: string, group: string, input: unknown): Partition {
    const part = this.partitions.get(partitionKeyOf(model, group));
    if (part && part.schedulableCount() > 0) return part;
    throw noSchedulableWorkersFor(lookupFacts(this.workers.values(), model, group, input));
  }

  /** Whether the index is fed by KV events through a host feed (else the core owns removals). */
  private get fedByEvents(): boolean { return this.feed !== null && this.config.useKvEvents; }

  /** Whether worker records carry `kv_events` (a KV-event feed that describes its ranks). */
  private get describesFeeds(): boolean { return this.fedByEvents && this.feed!.describe !== undefined; }

  /** The wire record of a worker, with its feeds' `kv_events` when the feed describes them. */
  private record(e: WorkerEntry, lifecycle: Lifecycle = e.lifecycle): WorkerRecord {
    if (!this.describesFeeds) return toRecord(e, lifecycle);
    return toRecord(e, lifecycle, e.feedError !== undefined ? failedFeeds(e.req, e.feedError) : this.feed!.describe!(e.req.worker_id));
  }

  /**
   * A booking on the rank completed prefill with tokens the rank had not cached: the engine now
   * publishes their complete blocks, which the feed expects (its silence signal).
   */
  protected expectBlocks(part: Partition, workerId: bigint, dpRank: number, done: PrefillDone | null): void {
    const blocks = done === null ? 0 : Math.floor(done.uncachedTokens / part.blockSize);
    if (blocks > 0 && this.fedByEvents) this.feed!.expectBlocks?.(workerId, dpRank, blocks, (done as PrefillDone).bookedAt);
  }

  /**
   * The checks a record passes before it changes anything: its endpoints against the endpoint
   * policy (422), and room for the partition it would create (429). A worker that is the only one
   * of its partition frees that partition when it moves, so its move never lacks room.
   */
  private admit(req: WorkerRequest): void {
    if (this.endpointPolicy) {
      const named: [string, string | undefined][] = [['kv_events_endpoint', req.kv_events_endpoint], ['replay_endpoint', req.replay_endpoint]];
      for (const [rank, ep] of req.kv_events_endpoints) named.push([`kv_events_endpoints.${rank}`, ep]);
      for (const [field, ep] of named) {
        const why = ep === undefined ? null : this.endpointPolicy(ep);
        if (why !== null) {
          throw new SelectionError('SEL_ENDPOINT_NOT_ALLOWED', `Failed to deserialize the JSON body into the target type: ${field}: ${why}`);
        }
      }
    }
    const key = partitionKeyOf(req.model_name, req.routing_group);
    if (this.partitions.has(key) || metadataReasons(req, { queueing: this.queueing, kvEvents: this.config.useKvEvents }).length > 0) return;
    const prev = this.workers.get(req.worker_id);
    const leaving = prev?.partitionKey != null ? this.partitions.get(prev.partitionKey) : undefined;
    const freed = leaving !== undefined && leaving.workers.size === 1 ? 1 : 0;
    this.checkPartitionRoom(req.model_name, req.routing_group, this.partitions.size - freed);
  }

  /** 429 when `current` partitions leave no room for another. */
  private checkPartitionRoom(model: string, group: string, current: number): void {
    if (current < this.limits.maxPartitions) return;
    this.limitRejections.partitions++;
    throw partitionLimit(model, group, current, this.limits.maxPartitions);
  }

  /** Apply a full worker record: partition move, reasons, partition creation, rank diff, listeners. */
  private reconcileWorker(req: WorkerRequest): WorkerEntry {
    const key = partitionKeyOf(req.model_name, req.routing_group);
    const prev = this.workers.get(req.worker_id);
    const entry: WorkerEntry = { req, lifecycle: 'incomplete', reasons: [], partitionKey: null };
    if (prev && prev.partitionKey !== null && (prev.partitionKey !== key || this.recreates(prev, req))) this.detach(prev, 'left');
    const oldRanks = prev && prev.partitionKey === key ? new Set(ranksOf(prev.req)) : null;

    const reasons = metadataReasons(req, { queueing: this.queueing, kvEvents: this.config.useKvEvents });
    let part: Partition | null = null;
    if (reasons.length === 0) {
      try {
        part = this.ensurePartition(req.model_name, req.routing_group, req.block_size as number, req.is_eagle ?? false);
      } catch (err) {
        reasons.push(`reconciliation failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (part && this.fedByEvents) {
      try {
        this.feed!.reconcile(part, req.worker_id, eventEndpoints(req), req.replay_endpoint ?? null);
      } catch (err) {
        entry.feedError = err instanceof Error ? err.message : String(err);
        reasons.push(`reconciliation failed: ${entry.feedError}`);
        part = null;
      }
    }
    entry.reasons = reasons;
    if (!part || reasons.length > 0) {
      if (prev && prev.partitionKey !== null) this.detach(prev, 'left');
      this.workers.set(req.worker_id, entry);
      return entry;
    }
    // same partition: keep bookings on ranks present in both snapshots
    const newRanks = new Set(ranksOf(req));
    if (oldRanks) {
      for (const r of oldRanks) if (!newRanks.has(r)) this.dropRank(part, req.worker_id, r, 'rank');
    }
    for (const r of newRanks) part.loads.addRank(req.worker_id, r);
    entry.lifecycle = 'schedulable';
    entry.partitionKey = key;
    part.setWorker(entry);
    this.workers.set(req.worker_id, entry);
    this.drain(part);
    return entry;
  }

  /**
   * Whether re-registering `prev` as `req` in the same partition recreates it: `prev` is its only
   * worker and the block size or eagle flag changes (the partition is emptied, then created anew).
   */
  private recreates(prev: WorkerEntry, req: WorkerRequest): boolean {
    const part = prev.partitionKey === null ? undefined : this.partitions.get(prev.partitionKey);
    return part !== undefined && part.workers.size === 1 && part.workers.has(req.worker_id)
      && (part.blockSize !== req.block_size || part.isEagle !== (req.is_eagle ?? false));
  }

  /**
   * Remove a worker from its partition: listeners, blocks, bookings, reservation rows. A partition
   * left without workers is destroyed: its index handles are freed and a later worker may create
   * it again, with any block size. `change` says why, for the bookings it releases.
   */
  private detach(e: WorkerEntry, change: WorkerChange): void {
    if (e.partitionKey === null) return;
    const part = this.partitions.get(e.partitionKey);
    e.partitionKey = null;
    if (!part) return;
    part.removeWorker(e.req.worker_id);
    if (this.fedByEvents) this.feed!.detach(e.req.worker_id);
    for (const r of part.loads.ranks()) if (r.workerId === e.req.worker_id) this.dropRank(part, r.workerId, r.dpRank, change);
    part.index.removeWorker(e.req.worker_id);
    this.drain(part);
    if (part.workers.size === 0) this.dropPartition(part);
  }

  /** Destroys an empty partition (queued requests of it fail with 503 first). */
  private dropPartition(part: Partition): void {
    for (const w of part.queue.payloads()) {
      part.queue.remove(w);
      w.fail(noEndpoints());
    }
    this.partitions.delete(part.key);
    part.destroy();
  }

  private dropRank(part: Partition, workerId: bigint, dpRank: number, change: WorkerChange): void {
    this.dropBookings(part, workerId, dpRank, change);
    part.policy?.onRankRemoved?.(workerId, dpRank);
    if (!this.fedByEvents) part.index.removeRank(workerId, dpRank); // else the feed drops retired ranks
    part.approx?.removeRank(workerId, dpRank);
    part.predicted?.removeRank(workerId, dpRank);
  }

  /** A new partition with its policy instance, admission queue and session table. */
  private createPartition(key: string, modelName: string, routingGroup: string, blockSize: number, isEagle: boolean): Partition {
    const cfg = this.config;
    const inst = this.policyConfig?.aggregated ?? null;
    const name = inst?.type ?? cfg.workerSelectionPolicy;
    const params = inst?.parameters ?? this.policyParameters;
    const routing = parseRoutingPolicy(cfg.routingPolicy ?? 'kv');
    const policy: WorkerSelectionPolicy | null = name && name !== 'default' && this.policies
      ? this.policies.create(name, { modelName, routingGroup, blockSize }, params)
      : createRoutingPolicy(routing.kind, { modelName, routingGroup, blockSize }, routing.params, {
        model: (): TtftModel => created.loads.ttftModel, heldBlocks: (w, r): number => created.index.treeSize(w, r), clock: this.clock,
        liveSharing: (words, blocks): number => (blocks > 0 ? created.loads.blocks.liveCount(words[2 * blocks - 2], words[2 * blocks - 1]) : 0),
      });
    const created = new Partition(key, {
      modelName, routingGroup, blockSize, isEagle, clock: this.clock, rng: this.rng,
      expirySecs: cfg.activeRequestExpirySecs, policy,
      mode: !cfg.useKvEvents ? 'approximate' : cfg.routerPredictedTtlSecs !== null ? 'events+predicted' : 'events',
      ttlSecs: !cfg.useKvEvents ? cfg.routerTtlSecs : cfg.routerPredictedTtlSecs ?? cfg.routerTtlSecs,
    });
    created.queue = new AdmissionQueue<Waiter>(
      resolveProfile(this.policyConfig, modelName, cfg.routerQueueThreshold, cfg.routerQueuePolicy), this.clock);
    const aff = this.affinity;
    if (aff) {
      created.affinity = new SessionAffinityTable({
        ttlSecs: aff.ttlSecs, mode: aff.mode, maxEntries: aff.maxEntries, clock: this.clock,
        writerId: this.replicaId, sequenceStart: this.affinitySequenceStart,
        publish: (sessionId, t, v) => this.hooks.onAffinity?.({
          modelName, routingGroup, sessionId, workerId: t.workerId, dpRank: t.dpRank, sequence: v.sequence, writerId: v.writerId,
        }),
      });
    }
    return created;
  }
}

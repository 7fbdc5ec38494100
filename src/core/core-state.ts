/**
 * The state a SelectionCore's operations share: configuration, clock and RNG, the worker
 * catalog, the partitions (created here), the process-wide reservation index, the
 * pending-selection cache, the prompt normalizer and the host's feed and hooks. The operation
 * modules (catalog-ops, select-ops, reservation-ops, inspection, replica-apply) read and change
 * it; core.ts wires them together.
 */
import type { z } from 'zod';
import { LIMITS, queueingEnabled, type RouterConfig } from './config/config.js';
import { SelectionError, noSchedulableWorkers, noSchedulableWorkersFor } from './errors.js';
import { policyConfigQueues, resolveProfile, type RouterPolicyConfig } from './select/policy-config.js';
import { AdmissionQueue } from './select/queue.js';
import { describeIssues } from './wire/schemas.js';
import { partitionKeyOf, type WorkerEntry } from './catalog/catalog.js';
import { Partition } from './catalog/partition.js';
import { SessionAffinityTable, type AffinityLease } from './booking/affinity.js';
import { PendingSelectionCache } from './booking/pending.js';
import { ReservationIndex } from './booking/reservations.js';
import type { PromptNormalizer } from './index/prompt.js';
import type { PolicyRegistry } from './select/policy.js';
import type { CoreHooks, CoreOptions, IndexFeed, SessionAffinityConfig, Waiter } from './core-api.js';
import type { Clock, Rng } from './wire/types.js';
import { systemClock } from './random.js';

/** Milliseconds per second (clocks read milliseconds; configuration speaks seconds). */
export const MS = 1000;

/** Validates a body with a schema; a misfit is the 422 `SEL_UNPROCESSABLE` naming the field. */
export function parseBody<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new SelectionError('SEL_UNPROCESSABLE', describeIssues(r.error));
  return r.data;
}

export class CoreState {
  readonly config: RouterConfig;
  readonly clock: Clock;
  readonly rng: Rng;
  readonly workers = new Map<bigint, WorkerEntry>();
  readonly partitions = new Map<string, Partition>();
  readonly reservations = new ReservationIndex<AffinityLease>();
  readonly pending: PendingSelectionCache;
  readonly normalizer: PromptNormalizer;
  readonly feed: IndexFeed | null;
  readonly hooks: CoreHooks;
  /** Queueing on: `router_queue_threshold` or a policy class that queues. */
  readonly queueing: boolean;
  readonly replicaId: bigint;
  readonly affinity: SessionAffinityConfig | null;
  shuttingDown = false;
  private readonly policies: PolicyRegistry | null;
  private readonly policyParameters: Readonly<Record<string, unknown>>;
  private readonly policyConfig: RouterPolicyConfig | null;
  private readonly affinitySequenceStart: bigint;

  constructor(config: RouterConfig, o: CoreOptions, normalizer: PromptNormalizer, rng: Rng) {
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
    this.replicaId = o.replicaId ?? (rng.u64() | 1n);
    this.affinity = o.sessionAffinity ?? null;
    this.affinitySequenceStart = o.affinitySequenceStart ?? BigInt(Date.now()) * 1_000_000n;
  }

  /** Whether the index is fed by KV events through a host feed (else the core owns removals). */
  get fedByEvents(): boolean { return this.feed !== null && this.config.useKvEvents; }

  /** Get or create a partition; a mismatching block size or eagle flag is a 409 SelectionError. */
  ensurePartition(modelName: string, routingGroup: string, blockSize: number, isEagle: boolean): Partition {
    const key = partitionKeyOf(modelName, routingGroup);
    const p = this.partitions.get(key);
    if (p) {
      if (p.blockSize !== blockSize) throw new SelectionError('SEL_CONFLICT', `${p.label()} has block_size ${p.blockSize}, but ${blockSize} was requested`);
      if (p.isEagle !== isEagle) throw new SelectionError('SEL_CONFLICT', `${p.label()} has is_eagle ${p.isEagle}, but ${isEagle} was requested`);
      return p;
    }
    const cfg = this.config;
    const inst = this.policyConfig?.aggregated ?? null;
    const name = inst?.type ?? cfg.workerSelectionPolicy;
    const params = inst?.parameters ?? this.policyParameters;
    const policy = name && name !== 'default' && this.policies
      ? this.policies.create(name, { modelName, routingGroup, blockSize }, params) : null;
    const created = new Partition(key, {
      modelName, routingGroup, blockSize, isEagle, clock: this.clock, rng: this.rng,
      expirySecs: cfg.activeRequestExpirySecs, trackActiveBlocks: cfg.routerTrackActiveBlocks, policy,
      mode: !cfg.useKvEvents ? 'approximate' : cfg.routerPredictedTtlSecs !== null ? 'events+predicted' : 'events',
      ttlSecs: !cfg.useKvEvents ? cfg.routerTtlSecs : cfg.routerPredictedTtlSecs ?? cfg.routerTtlSecs,
    });
    created.queue = new AdmissionQueue<Waiter>(
      resolveProfile(this.policyConfig, modelName, cfg.routerQueueThreshold, cfg.routerQueuePolicy), this.clock);
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

  /** The partition of a request, or the spec's 503. */
  readyPartition(model: string, group: string): Partition {
    const part = this.partitions.get(partitionKeyOf(model, group));
    if (part && part.schedulableCount() > 0) return part;
    for (const e of this.workers.values()) if (e.lifecycle === 'schedulable') throw noSchedulableWorkersFor(model, group);
    throw noSchedulableWorkers();
  }

  /** Removes a reservation row and releases its session lease (the binding starts idling). */
  removeRow(id: string): void {
    const row = this.reservations.remove(id);
    if (row) this.releaseLease(row);
  }

  releaseLease(row: { partitionKey: string; lease?: AffinityLease }): void {
    if (row.lease) this.partitions.get(row.partitionKey)?.affinity?.release(row.lease);
  }
}

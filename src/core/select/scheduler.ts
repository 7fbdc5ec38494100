/**
 * Scheduling of one request in a partition (algorithms §5, §7): the candidate rows (tiered
 * overlap + load projection per schedulable rank), eligibility and session steering, the cost or
 * custom policy and the pick, and admission through the partition's queue. Books nothing: the
 * booking belongs to the select and reservation operations.
 */
import type { EffectiveRouterValues, RouterConfig } from '../config/config.js';
import { SelectionError, noEndpoints, noLongerSchedulable, queueRejected } from '../errors.js';
import { classQueues, poolIsBusy, rankIsBusy, type PolicyClassConfig } from './policy-config.js';
import type { SelectAndReserveRequest } from '../wire/schemas.js';
import type { WorkerEntry } from '../catalog/catalog.js';
import type { RankOverlap } from '../index/kv-index.js';
import type { Partition } from '../catalog/partition.js';
import type { AffinityTarget } from '../booking/affinity.js';
import type { Waiter } from './queue.js';
import type { NormalizedPrompt } from '../index/prompt.js';
import { mergePredicted } from './overlap.js';
import { costParams, defaultCosts, effectivePrefillTokens, eligible, pickByCost, untrackedBlocks, type Candidate } from './selector.js';
import { CandidateRowView, runPolicy, selectionContext, type WorkerSelectionContext } from './policy.js';
import type { OverlapSummary, SelectOptions, SelectResponse } from '../wire/types.js';
import { MS, type Clock, type Rng } from '../random.js';

/** One scheduled choice, before booking. */
export interface Choice {
  part: Partition;
  entry: WorkerEntry;
  dpRank: number;
  prompt: NormalizedPrompt;
  overlap: OverlapSummary;
  effectivePrefillTokens: number;
  potentialDecodeBlocks: number;
  activePrefillTokens: number;
}

/** A prompt's tiered overlap per rank, by `worker:rank` key (reused while a request waits). */
export type OverlapCache = Map<string, RankOverlap>;

/** What scheduling reads of its core. */
export interface SchedulerContext {
  readonly config: RouterConfig;
  readonly clock: Clock;
  readonly rng: Rng;
  /** Queueing on: `router_queue_threshold` or a policy class that queues. */
  readonly queueing: boolean;
}

export class Scheduler {
  constructor(private readonly s: SchedulerContext) {}

  /**
   * Admission (algorithms §7): with queueing on for the request's class, a request waits when the
   * class has a backlog or every eligible rank is busy; otherwise it runs at once. A waiter runs
   * when a dequeue finds its eligible ranks not all busy; its cached overlap is reused unless it
   * waited longer than `DYN_ROUTER_OVERLAP_REFRESH_AFTER_SECS` (then it is re-queried). A queue
   * limit rejects with 429 and `details`. `onDrop` undoes the caller's claim when the waiter is
   * dropped without running (abort, shutdown).
   */
  admit<R>(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues,
    opts: SelectOptions, steer: AffinityTarget | undefined, run: (cache?: OverlapCache) => R, onDrop: () => void): Promise<R> {
    if (!this.s.queueing) return Promise.resolve().then(() => run());
    const cache = this.overlapCache(part, prompt, eff);
    const kept = this.eligibleOf(this.candidates(part, prompt, eff, cache), req, steer);
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
    const enqueuedAt = this.s.clock.now();
    return new Promise<R>((resolve, reject) => {
      const onAbort = (): void => {
        if (part.queue.remove(waiter)) waiter.fail(new SelectionError('SEL_INTERNAL', 'request cancelled by the client'));
      };
      const waiter: Waiter = {
        canRun: () => this.poolBusy(cfg, this.eligibleOf(this.candidates(part, prompt, eff, cache), req, steer)) === false,
        run: () => {
          opts.signal?.removeEventListener('abort', onAbort);
          const refresh = this.s.config.overlapRefreshAfterSecs;
          const stale = refresh > 0 && this.s.clock.now() - enqueuedAt > refresh * MS;
          if (this.eligibleOf(this.candidates(part, prompt, eff, cache), req, steer).length === 0) {
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

  poolBusy(cfg: PolicyClassConfig, kept: readonly Candidate[]): boolean {
    let busy = 0;
    for (const c of kept) if (rankIsBusy(cfg, c.activePrefillTokens, c.maxNumBatchedTokens)) busy++;
    return poolIsBusy(cfg, busy, kept.length);
  }

  /** Admit waiters of a partition while their heads can run (after load drops, worker changes, rechecks). */
  drain(part: Partition): void {
    if (!this.s.queueing) return;
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
  eligibleOf(cands: readonly Candidate[], req: SelectAndReserveRequest, steer?: AffinityTarget): Candidate[] {
    const kept = this.eligibleByRequest(cands, req);
    if (!steer) return kept;
    const narrowed = kept.filter((c) => c.workerId === steer.workerId && (steer.dpRank === null || c.dpRank === steer.dpRank));
    return narrowed.length > 0 ? narrowed : kept;
  }

  eligibleByRequest(cands: readonly Candidate[], req: SelectAndReserveRequest): Candidate[] {
    return eligible(cands, {
      allowedWorkerIds: req.allowed_worker_ids,
      requiredTaints: req.routing_constraints.required_taints,
      pinned: req.pinned_worker ? { workerId: req.pinned_worker.worker_id, dpRank: req.pinned_worker.dp_rank } : undefined,
      affinityTarget: req.affinity_target ? { workerId: req.affinity_target.worker_id, dpRank: req.affinity_target.dp_rank } : undefined,
    });
  }

  /** Scheduling of one request: candidates, filters, cost or policy, pick. Books nothing. */
  schedule(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues,
    cache?: OverlapCache, steer?: AffinityTarget): Choice {
    const cands = this.candidates(part, prompt, eff, cache);
    const kept = this.eligibleOf(cands, req, steer);
    if (kept.length === 0) throw noEndpoints();
    let pick: number;
    if (part.policy) {
      const views = kept.map((c) => new CandidateRowView(c));
      pick = runPolicy(part.policy, this.policyContext(part, req, prompt, eff), views, this.s.rng);
    } else {
      const costs = defaultCosts(kept, costParams(this.s.config, eff,
        { blockSize: part.blockSize, islTokens: prompt.isl, preferredTaints: req.routing_constraints.preferred_taints }));
      pick = pickByCost(costs, kept.length, eff.routerTemperature, this.s.rng);
    }
    const c = kept[pick];
    const entry = part.workers.get(c.workerId) as WorkerEntry;
    // overlap summary over the chosen worker's ranks (api §2.7)
    const dp: Record<string, number> = {};
    let gpu = 0, cpu = 0, disk = 0;
    for (const r of cands) {
      if (r.workerId !== c.workerId) continue;
      const d = r.deviceBlocks, h = d + r.hostExtBlocks, k = h + r.diskExtBlocks;
      dp[String(r.dpRank)] = d * part.blockSize;
      gpu = Math.max(gpu, d); cpu = Math.max(cpu, h); disk = Math.max(disk, k);
    }
    const bs = part.blockSize;
    const overlap: OverlapSummary = { longest_matched: Math.max(gpu, cpu, disk) * bs, gpu: gpu * bs, dp, cpu: cpu * bs, disk: disk * bs };
    return {
      part, entry, dpRank: c.dpRank, prompt, overlap,
      effectivePrefillTokens: effectivePrefillTokens(prompt.isl, c.cachedTokens),
      potentialDecodeBlocks: c.potentialDecodeBlocks + untrackedBlocks(prompt.isl, bs, prompt.nBlocks),
      activePrefillTokens: c.activePrefillTokens,
    };
  }

  /**
   * The index's tiered overlap of a prompt per rank (`"worker:rank"` keys), the predicted side
   * index merged in (select/overlap.ts). Empty for a partition destroyed while the request waited.
   */
  overlapCache(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues): OverlapCache {
    const byRank: OverlapCache = new Map();
    if (prompt.locals && prompt.locals.length > 0 && !part.destroyed) {
      const w = {
        overlapScoreCredit: eff.overlapScoreCredit, hostCacheHitWeight: this.s.config.hostCacheHitWeight,
        diskCacheHitWeight: this.s.config.diskCacheHitWeight,
      };
      let rows = part.index.match(prompt.locals, prompt.isl, w);
      if (part.predicted) {
        rows = mergePredicted(rows, part.predicted.index.match(prompt.locals, prompt.isl, w), w, part.blockSize, prompt.isl);
      }
      for (const o of rows) byRank.set(o.key, o);
    }
    return byRank;
  }

  /** Candidate rows of every schedulable rank: tiered overlap + load projection. */
  candidates(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues, cache?: OverlapCache): Candidate[] {
    const ranks = part.schedulableRanks();
    const byRank = cache ?? this.overlapCache(part, prompt, eff);
    const out: Candidate[] = new Array(ranks.length);
    for (let i = 0; i < ranks.length; i++) {
      const { entry, dpRank, key } = ranks[i];
      const w = entry.req.worker_id;
      const o = byRank.get(key);
      const load = part.loads.loadOf(key);
      const depth = prompt.nBlocks > 0 ? part.loads.depthOf(key, prompt.seqWords, prompt.nBlocks) : 0;
      out[i] = {
        workerId: w, dpRank, taints: entry.req.taints,
        deviceBlocks: o?.device ?? 0, hostExtBlocks: o?.hostExt ?? 0, diskExtBlocks: (o?.diskExt ?? 0) + (o?.externalExt ?? 0),
        sharedBeyondDeviceBlocks: 0, cachedTokens: o?.cachedTokens ?? 0,
        hasLoad: true, activePrefillTokens: load.activePrefillTokens,
        potentialDecodeBlocks: load.activeDecodeBlocks + Math.max(0, prompt.nBlocks - depth),
        activeRequests: load.activeRequests,
        totalKvBlocks: entry.req.total_kv_blocks ?? null, maxNumBatchedTokens: entry.req.max_num_batched_tokens ?? null,
      };
    }
    return out;
  }

  policyContext(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues): WorkerSelectionContext {
    return selectionContext({
      promptTokens: prompt.isl, blockSize: part.blockSize, tracksPrefillTokens: eff.trackPrefillTokens,
      modelName: part.modelName, routingGroup: part.routingGroup,
      sessionContext: req.session_context, sessionId: req.session_id,
      affinityTarget: req.affinity_target ? { workerId: req.affinity_target.worker_id, dpRank: req.affinity_target.dp_rank } : undefined,
      expectedOutputTokens: req.expected_output_tokens, priorityJump: req.priority_jump, strictPriority: req.strict_priority,
      routerOverride: req.router_config_override ?? {}, preferredTaints: req.routing_constraints.preferred_taints,
    });
  }

  response(c: Choice, selectionId: string | undefined): SelectResponse {
    const w = c.entry.req;
    const res: SelectResponse = {
      model_name: c.part.modelName, routing_group: c.part.routingGroup,
      worker_id: w.worker_id, dp_rank: c.dpRank, endpoint: w.endpoint ?? '', block_size: c.part.blockSize,
      overlap: c.overlap, effective_prefill_tokens: c.effectivePrefillTokens, potential_decode_blocks: c.potentialDecodeBlocks,
    };
    if (selectionId !== undefined) res.selection_id = selectionId;
    const t = this.s.config.conditionalDisaggDecodeBusyThreshold;
    if (t !== null && w.total_kv_blocks !== undefined) res.decode_busy = c.potentialDecodeBlocks > t * w.total_kv_blocks;
    // keep selection_id first in the JSON, as Dynamo's struct order does
    return selectionId === undefined ? res : { selection_id: selectionId, ...res };
  }
}

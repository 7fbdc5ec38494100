/**
 * Scheduling of one request in a partition (Dynamo `lib/kv-router/src/scheduling/selector/default.rs`, `lib/kv-router/src/scheduling/queue.rs`): the candidate rows (tiered
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
import { costParams, effectivePrefillTokens, pickByCost, untrackedBlocks, type Candidate } from './selector.js';
import { CandidateRowView, runPolicy, selectionContext, type WorkerSelectionContext } from './policy.js';
import { RankView, SelectScratch, matchInto, type Weights } from './rank-view.js';
import { denseCosts } from './dense-cost.js';
import { keepEligible } from './eligible-positions.js';
import type { OverlapSummary, SelectOptions, SelectResponse } from '../wire/types.js';
import { MS, type Clock, type Rng } from '../random.js';

/** One scheduled choice, before booking. */
export interface Choice {
  part: Partition;
  entry: WorkerEntry;
  dpRank: number;
  /** The rank's load row (-1: look it up by worker and rank). */
  row: number;
  prompt: NormalizedPrompt;
  overlap: OverlapSummary;
  effectivePrefillTokens: number;
  potentialDecodeBlocks: number;
  activePrefillTokens: number;
}

/**
 * A prompt's tiered overlap per rank, reused while a request waits in the queue: compact rows
 * (load row, device, host extension, disk + external extension, cached tokens) with each row's
 * `worker:rank` key, by which the rows are found again when ranks changed meanwhile (`epoch`).
 */
export interface OverlapCache {
  epoch: number; n: number; rows: Int32Array; keys: string[];
  dev: Int32Array; host: Int32Array; disk: Int32Array; cached: Float64Array;
}

/** What scheduling reads of its core. */
export interface SchedulerContext {
  readonly config: RouterConfig;
  readonly clock: Clock;
  readonly rng: Rng;
  /** Queueing on: `router_queue_threshold` or a policy class that queues. */
  readonly queueing: boolean;
}

export class Scheduler {
  private readonly scratches = new WeakMap<Partition, SelectScratch>();

  constructor(private readonly s: SchedulerContext) {}

  /**
   * Admission (Dynamo `lib/kv-router/src/scheduling/queue.rs`): with queueing on for the request's class, a request waits when the
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
    const { best, cls, cfg, runNow } = this.pass(part, req, prompt, eff, cache, steer, (view, S) => {
      let top = 0;
      for (let i = 0; i < S.nKept; i++) top = Math.max(top, S.cached[view.rows[S.posAt(i)]]);
      const c = part.queue.profile.resolve(opts.policyClass, Math.max(prompt.isl - top, 0));
      const config = part.queue.classConfig(c);
      return { best: top, cls: c, cfg: config, runNow: !classQueues(config) || (!part.queue.hasBacklog(c) && !this.poolBusy(config, part, view, S)) };
    });
    const uncached = Math.max(prompt.isl - best, 0);
    if (runNow) return Promise.resolve().then(() => run(cache));
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
        canRun: () => this.pass(part, req, prompt, eff, cache, steer, (view, S) => this.poolBusy(cfg, part, view, S)) === false,
        run: () => {
          opts.signal?.removeEventListener('abort', onAbort);
          const refresh = this.s.config.overlapRefreshAfterSecs;
          const stale = refresh > 0 && this.s.clock.now() - enqueuedAt > refresh * MS;
          if (this.pass(part, req, prompt, eff, cache, steer, (_view, S) => S.nKept) === 0) {
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

  /** Whether the pass's eligible ranks count as busy for a policy class. */
  private poolBusy(cfg: PolicyClassConfig, part: Partition, view: RankView, S: SelectScratch): boolean {
    const prefill = part.loads.prefill;
    let busy = 0;
    for (let i = 0; i < S.nKept; i++) {
      const pos = S.posAt(i);
      if (rankIsBusy(cfg, prefill[view.rows[pos]], view.refs[pos].entry.req.max_num_batched_tokens ?? null)) busy++;
    }
    return poolIsBusy(cfg, busy, S.nKept);
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

  /** Scheduling of one request: overlap, depth, eligibility, cost or policy, pick. Books nothing. */
  schedule(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues,
    cache?: OverlapCache, steer?: AffinityTarget): Choice {
    return this.pass(part, req, prompt, eff, cache, steer, (view, S) => {
      if (S.nKept === 0) throw noEndpoints();
      let pos: number;
      if (part.policy) {
        const views = new Array<CandidateRowView>(S.nKept);
        for (let i = 0; i < S.nKept; i++) views[i] = new CandidateRowView(this.candidateAt(part, view, S, S.posAt(i), prompt));
        pos = S.posAt(runPolicy(part.policy, this.policyContext(part, req, prompt, eff), views, this.s.rng));
      } else {
        denseCosts(S, view, part.loads, costParams(this.s.config, eff,
          { blockSize: part.blockSize, islTokens: prompt.isl, preferredTaints: req.routing_constraints.preferred_taints }), prompt.nBlocks);
        pos = S.posAt(pickByCost(S.costs, S.nKept, eff.routerTemperature, this.s.rng));
      }
      return this.choice(part, view, S, pos, prompt);
    });
  }

  /** The choice of position `pos`, with the overlap summary over its worker's ranks (`lib/kv-router/src/services/selection/types.rs`). */
  private choice(part: Partition, view: RankView, S: SelectScratch, pos: number, prompt: NormalizedPrompt): Choice {
    const row = view.rows[pos];
    const entry = view.refs[pos].entry;
    const bs = part.blockSize;
    const dp: Record<string, number> = {};
    let gpu = 0, cpu = 0, disk = 0;
    const [first, end] = view.span(entry.req.worker_id);
    for (let p = first; p < end; p++) {
      const r = view.rows[p];
      const d = S.dev[r], h = d + S.host[r], k = h + S.disk[r];
      dp[String(view.dpRanks[p])] = d * bs;
      gpu = Math.max(gpu, d); cpu = Math.max(cpu, h); disk = Math.max(disk, k);
    }
    const overlap: OverlapSummary = { longest_matched: Math.max(gpu, cpu, disk) * bs, gpu: gpu * bs, dp, cpu: cpu * bs, disk: disk * bs };
    const loads = part.loads;
    return {
      part, entry, dpRank: view.dpRanks[pos], row, prompt, overlap,
      effectivePrefillTokens: effectivePrefillTokens(prompt.isl, S.cached[row]),
      potentialDecodeBlocks: loads.decodeOf(row) + Math.max(0, prompt.nBlocks - S.depth[row]) + untrackedBlocks(prompt.isl, bs, prompt.nBlocks),
      activePrefillTokens: loads.prefill[row],
    };
  }

  /** The candidate row of position `pos` (the object form policies and `/potential_loads` read). */
  private candidateAt(part: Partition, view: RankView, S: SelectScratch, pos: number, prompt: NormalizedPrompt): Candidate {
    const row = view.rows[pos];
    const w = view.refs[pos].entry.req;
    const loads = part.loads;
    return {
      workerId: w.worker_id, dpRank: view.dpRanks[pos], taints: w.taints,
      deviceBlocks: S.dev[row], hostExtBlocks: S.host[row], diskExtBlocks: S.disk[row],
      sharedBeyondDeviceBlocks: 0, cachedTokens: S.cached[row],
      hasLoad: true, activePrefillTokens: loads.prefill[row],
      potentialDecodeBlocks: loads.decodeOf(row) + Math.max(0, prompt.nBlocks - S.depth[row]),
      activeRequests: loads.requests[row], prefillPendingRequests: loads.waiting.count[row],
      totalKvBlocks: w.total_kv_blocks ?? null, maxNumBatchedTokens: w.max_num_batched_tokens ?? null,
      contextTokens: loads.context[row], activeOverlapBlocks: S.depth[row],
      maxNumSeqs: w.max_num_seqs ?? null, busyFraction: loads.waiting.busyFraction(row, this.s.clock.now()),
      pendingSecs: loads.waiting.oldestSecs(row, this.s.clock.now()),
    };
  }

  /** Candidate rows of every schedulable rank: tiered overlap + load projection. */
  candidates(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues, cache?: OverlapCache): Candidate[] {
    return this.pass(part, null, prompt, eff, cache, undefined, (view, S) => {
      const out = new Array<Candidate>(view.n);
      for (let p = 0; p < view.n; p++) out[p] = this.candidateAt(part, view, S, p, prompt);
      return out;
    });
  }

  /**
   * The prompt's tiered overlap per rank (the predicted side index merged in, select/overlap.ts),
   * kept for a request that may wait in the queue. Empty for a partition destroyed meanwhile.
   */
  overlapCache(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues): OverlapCache {
    return this.pass(part, null, prompt, eff, undefined, undefined, (_view, S) => {
      const n = S.nTouched;
      const c: OverlapCache = {
        epoch: part.loads.epoch, n, rows: S.touched.slice(0, n), keys: new Array<string>(n),
        dev: new Int32Array(n), host: new Int32Array(n), disk: new Int32Array(n), cached: new Float64Array(n),
      };
      for (let i = 0; i < n; i++) {
        const r = c.rows[i];
        c.keys[i] = part.loads.keyOf(r);
        c.dev[i] = S.dev[r]; c.host[i] = S.host[r]; c.disk[i] = S.disk[r]; c.cached[i] = S.cached[r];
      }
      return c;
    });
  }

  /**
   * The index's tiered overlap of a prompt per rank (`"worker:rank"` keys), the predicted side
   * index merged in (select/overlap.ts): the object form `/overlap_scores` and explicit bookings
   * read. Empty for a partition destroyed while the request waited.
   */
  overlapByKey(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues): Map<string, RankOverlap> {
    const byRank = new Map<string, RankOverlap>();
    if (prompt.locals && prompt.locals.length > 0 && !part.destroyed) {
      const w = this.weights(eff);
      let rows = part.index.match(prompt.locals, prompt.isl, w);
      if (part.predicted) {
        rows = mergePredicted(rows, part.predicted.index.match(prompt.locals, prompt.isl, w), w, part.blockSize, prompt.isl);
      }
      for (const o of rows) byRank.set(o.key, o);
    }
    return byRank;
  }

  private weights(eff: EffectiveRouterValues): Weights {
    return {
      overlapScoreCredit: eff.overlapScoreCredit, hostCacheHitWeight: this.s.config.hostCacheHitWeight,
      diskCacheHitWeight: this.s.config.diskCacheHitWeight,
    };
  }

  /**
   * One pass over a partition's ranks for a prompt: fills the partition's scratch with the
   * overlap (from `cache`, or the index) and the active-prefix depth per rank, keeps the
   * request's eligible positions (every position without a request), runs `f`, and clears the
   * scratch whatever `f` does.
   */
  private pass<T>(part: Partition, req: SelectAndReserveRequest | null, prompt: NormalizedPrompt, eff: EffectiveRouterValues,
    cache: OverlapCache | undefined, steer: AffinityTarget | undefined, f: (view: RankView, S: SelectScratch) => T): T {
    let S = this.scratches.get(part);
    if (S === undefined) this.scratches.set(part, S = new SelectScratch());
    // a policy that selects from inside a selection gets a scratch of its own
    if (S.active) S = new SelectScratch();
    const loads = part.loads;
    const refs = part.schedulableRanks();
    let view = S.view;
    if (view === null || view.refs !== refs || view.epoch !== loads.epoch) S.view = view = new RankView(refs, loads, loads.epoch);
    S.fit(loads.prefill.length, view.n, view.groupTaints.length);
    S.begin();
    S.active = true;
    try {
      if (cache !== undefined) {
        const same = cache.epoch === loads.epoch;
        for (let i = 0; i < cache.n; i++) {
          const r = same ? cache.rows[i] : loads.rowOfKey(cache.keys[i]);
          if (r >= 0) S.put(r, cache.dev[i], cache.host[i], cache.disk[i], cache.cached[i]);
        }
      } else if (prompt.locals && prompt.locals.length > 0 && !part.destroyed) {
        matchInto(S, part, prompt.locals, prompt.isl, this.weights(eff));
      }
      if (prompt.nBlocks > 0) S.nDepth = loads.blocks.depths(prompt.seqWords, prompt.nBlocks, S.depth, S.depthRows);
      if (req === null) { S.all = true; S.nKept = view.n; } else keepEligible(view, S, req, steer);
      return f(view, S);
    } finally {
      S.clear();
      S.active = false;
    }
  }

  policyContext(part: Partition, req: SelectAndReserveRequest, prompt: NormalizedPrompt, eff: EffectiveRouterValues): WorkerSelectionContext {
    return selectionContext({
      promptTokens: prompt.isl, blockSize: part.blockSize, tracksPrefillTokens: eff.trackPrefillTokens,
      modelName: part.modelName, routingGroup: part.routingGroup,
      sessionContext: req.session_context, sessionId: req.session_id,
      affinityTarget: req.affinity_target ? { workerId: req.affinity_target.worker_id, dpRank: req.affinity_target.dp_rank } : undefined,
      expectedOutputTokens: req.expected_output_tokens, priorityJump: req.priority_jump, strictPriority: req.strict_priority,
      routerOverride: req.router_config_override ?? {}, preferredTaints: req.routing_constraints.preferred_taints,
      prefixWords: prompt.seqWords,
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

/**
 * Custom worker selection (Dynamo `lib/kv-router/src/services/selection/service.rs`, Dynamo "Write Custom Routing Strategies"): a
 * {@link WorkerSelectionPolicy} is ordered filters (keep/reject one host-eligible candidate),
 * scorers (one finite cost per candidate, summed) and one picker (a row index). The host keeps
 * discovery, eligibility, queueing, reservation and accounting; {@link runPolicy} only chooses.
 * Policies are built per `(model_name, routing_group)` partition by a factory registered under a
 * type name; the built-in `dynamo-default-cost-fn` is the default selector as a policy.
 * Isomorphic: no `node:` imports.
 */
import { SelectionError, allFiltered, noEndpoints, policyBadRow, policyNonFiniteCost } from '../errors.js';
import type { EffectiveRouterValues } from '../config/config.js';
import type { SessionContext } from '../wire/schemas.js';
import type { Rng } from '../random.js';
import { type Candidate, type CostParams, defaultCosts, pickByCost } from './selector.js';

/** What a component reads, so a host can skip computing the rest (Dynamo `required_worker_inputs`). */
export const WorkerInputs = Object.freeze({ NONE: 0, CACHE: 1, LOAD: 2, PREFERRED_TAINT: 4 });

/** Read-only view of the request being routed. */
export interface WorkerSelectionContext {
  promptTokens(): number;
  /** `ceil(prompt_tokens / block_size)`. */
  requestBlocks(): number;
  blockSize(): number;
  /** Effective `track_prefill_tokens` (config merged with the request override). */
  tracksPrefillTokens(): boolean;
  sessionContext(): SessionContext | undefined;
  /** `session_context.session_id`, else the legacy `session_id`. */
  sessionId(): string | undefined;
  affinityTarget(): { workerId: bigint; dpRank?: number } | undefined;
  expectedOutputTokens(): number | undefined;
  priorityJump(): number;
  strictPriority(): number;
  routerTemperatureOverride(): number | undefined;
  /** The request's `router_config_override` fields (absent = not overridden). */
  routerOverride(): Readonly<Partial<EffectiveRouterValues>>;
  /** `routing_constraints.preferred_taints` (empty = none). */
  preferredTaints(): Readonly<Record<string, number>>;
  isPathPlanning(): boolean;
  modelName(): string;
  routingGroup(): string;
  /**
   * The prompt's chained block hashes (its tracking hashes, one per full block, root first) as
   * (lo, hi) u32 word pairs: equal entries at position i mean an equal prefix of i + 1 blocks.
   * Policies that keep their own prefix tree (the peers' routers) key it by these; no BigInt
   * per block. Empty when the host gives none.
   */
  prefixWords(): Uint32Array;
}

/** One host-eligible `(worker, dp_rank)` as policies see it. */
export interface CandidateView {
  worker(): { workerId: bigint; dpRank: number; taints: readonly string[] };
  // CACHE
  deviceOverlapBlocks(): number;
  /** Host-tier blocks beyond the device match. */
  hostOverlapBlocks(): number;
  /** Disk + external blocks beyond the host match. */
  diskOverlapBlocks(): number;
  /** Cached tokens (Dynamo `scheduling/overlap.rs`) used for the effective prefill. */
  accountingCacheEstimate(): number;
  hasTierMatches(): boolean;
  /** Shared-cache hit blocks beyond the device match. */
  sharedHits(): number;
  // LOAD
  /** Whether a load projection exists for this rank (false: load accessors read 0). */
  isAvailable(): boolean;
  activePrefillTokens(): number;
  decodeCostBlocks(): number;
  activeRequests(): number;
  /**
   * Booked requests whose `prefill_complete` has not been reported yet: queued at the engine or
   * in their prefill (the closest the service sees to an engine's waiting queue).
   */
  prefillPendingRequests(): number;
  totalKvBlocks(): number | null;
  /** The rank's `max_num_batched_tokens` from its record (null: not registered). */
  maxNumBatchedTokens(): number | null;
  /** The rank's `max_num_seqs` from its record (null: not registered). */
  maxNumSeqs(): number | null;
  /** The fraction of the last ~10 s during which a booking on the rank waited for its first token. */
  busyFraction(): number;
  /** Seconds the rank's oldest booking awaiting its first token (`prefill_complete`) has waited (0: none awaits). */
  pendingSeconds(): number;
  /** Context tokens (prompt + output so far) the rank's live bookings hold, not deduplicated. */
  contextTokens(): number;
  /** The prompt's leading blocks already held by live bookings on the rank (computed or being computed there). */
  activeOverlapBlocks(): number;
}

interface Component { requiredWorkerInputs?(): number }
export interface WorkerFilter extends Component { keep(ctx: WorkerSelectionContext, cand: CandidateView): boolean }
/** Writes one cost per candidate into `out` (zeroed, aligned with `cands`); scorers' costs are summed. */
export interface WorkerScorer extends Component {
  score(ctx: WorkerSelectionContext, cands: readonly CandidateView[], out: Float64Array): void;
}
export interface PickerRow { readonly candidate: CandidateView; cost(): number }
/** Returns the chosen row index. */
export interface WorkerPicker extends Component {
  pick(ctx: WorkerSelectionContext, rows: readonly PickerRow[], rng: Rng): number;
}
/** A booking of a prompt on a rank, as {@link WorkerSelectionPolicy.onBooked} sees it. */
export interface BookedPrompt {
  readonly workerId: bigint;
  readonly dpRank: number;
  /** The prompt's chained block hashes as (lo, hi) u32 pairs (see `prefixWords`). */
  readonly prefixWords: Uint32Array;
  readonly promptTokens: number;
}
export interface WorkerSelectionPolicy {
  readonly filters: readonly WorkerFilter[];
  readonly scorers: readonly WorkerScorer[];
  readonly picker: WorkerPicker;
  /**
   * Called when a selection of this partition is booked (select_and_reserve, or an explicit
   * reservation): a routing decision the policy may remember (the peers' routers insert the
   * routed prompt into their prefix trees here). Query-only selections never call it.
   */
  onBooked?(booking: BookedPrompt): void;
  /** Called when a worker rank leaves the partition (a policy drops what it keeps about it). */
  onRankRemoved?(workerId: bigint, dpRank: number): void;
}
export interface PolicyPartition { modelName: string; routingGroup: string; blockSize: number }
export type PolicyFactory = (partition: PolicyPartition, parameters: Readonly<Record<string, unknown>>) => WorkerSelectionPolicy;

/** Union of the inputs every component of `policy` declares (undeclared = all). */
export function policyInputs(policy: WorkerSelectionPolicy): number {
  const all = WorkerInputs.CACHE | WorkerInputs.LOAD | WorkerInputs.PREFERRED_TAINT;
  let m = 0;
  for (const c of [...policy.filters, ...policy.scorers, policy.picker]) m |= c.requiredWorkerInputs?.() ?? all;
  return m;
}

/** A {@link CandidateView} over a selector {@link Candidate} row. */
export class CandidateRowView implements CandidateView {
  constructor(readonly row: Candidate) {}
  worker() { return { workerId: this.row.workerId, dpRank: this.row.dpRank, taints: this.row.taints }; }
  deviceOverlapBlocks() { return this.row.deviceBlocks; }
  hostOverlapBlocks() { return this.row.hostExtBlocks; }
  diskOverlapBlocks() { return this.row.diskExtBlocks; }
  accountingCacheEstimate() { return this.row.cachedTokens; }
  hasTierMatches() { return this.row.hostExtBlocks > 0 || this.row.diskExtBlocks > 0; }
  sharedHits() { return this.row.sharedBeyondDeviceBlocks; }
  isAvailable() { return this.row.hasLoad; }
  activePrefillTokens() { return this.row.hasLoad ? this.row.activePrefillTokens : 0; }
  decodeCostBlocks() { return this.row.hasLoad ? this.row.potentialDecodeBlocks : 0; }
  activeRequests() { return this.row.hasLoad ? this.row.activeRequests : 0; }
  prefillPendingRequests() { return this.row.hasLoad ? this.row.prefillPendingRequests : 0; }
  totalKvBlocks() { return this.row.totalKvBlocks; }
  maxNumBatchedTokens() { return this.row.maxNumBatchedTokens; }
  maxNumSeqs() { return this.row.maxNumSeqs ?? null; }
  busyFraction() { return this.row.hasLoad ? this.row.busyFraction ?? 0 : 0; }
  pendingSeconds() { return this.row.hasLoad ? this.row.pendingSecs ?? 0 : 0; }
  contextTokens() { return this.row.hasLoad ? this.row.contextTokens ?? 0 : 0; }
  activeOverlapBlocks() { return this.row.hasLoad ? this.row.activeOverlapBlocks ?? 0 : 0; }
}

/** A selector row from any view (the row itself for a {@link CandidateRowView}). */
export function candidateRow(v: CandidateView): Candidate {
  if (v instanceof CandidateRowView) return v.row;
  const w = v.worker();
  return {
    workerId: w.workerId, dpRank: w.dpRank, taints: w.taints,
    deviceBlocks: v.deviceOverlapBlocks(), hostExtBlocks: v.hostOverlapBlocks(), diskExtBlocks: v.diskOverlapBlocks(),
    sharedBeyondDeviceBlocks: v.sharedHits(), cachedTokens: v.accountingCacheEstimate(),
    hasLoad: v.isAvailable(), activePrefillTokens: v.activePrefillTokens(), potentialDecodeBlocks: v.decodeCostBlocks(),
    activeRequests: v.activeRequests(), totalKvBlocks: v.totalKvBlocks(), maxNumBatchedTokens: v.maxNumBatchedTokens(),
    prefillPendingRequests: v.prefillPendingRequests(), contextTokens: v.contextTokens(), activeOverlapBlocks: v.activeOverlapBlocks(),
    maxNumSeqs: v.maxNumSeqs(), busyFraction: v.busyFraction(), pendingSecs: v.pendingSeconds(),
  };
}

/** Policy-component failures other than the catalogue's become a 500 policy error. */
function guard<T>(what: string, f: () => T): T {
  try { return f(); } catch (err) {
    if (err instanceof SelectionError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    throw new SelectionError('SEL_POLICY_INTERNAL', `worker selection policy ${what} failed: ${msg}`, undefined, { cause: err });
  }
}

/**
 * Runs `policy` over the host-eligible `cands` and returns the chosen index into `cands`.
 * Throws `noEndpoints` (503) for no candidates, `allFiltered` (503) when filters reject all,
 * `policyNonFiniteCost` (500, "non-finite") for a non-finite summed cost, `policyBadRow` (500,
 * "candidate row") for a row that is not an integer in `[0, n)`. Nothing here books anything.
 */
export function runPolicy(policy: WorkerSelectionPolicy, ctx: WorkerSelectionContext, cands: readonly CandidateView[], rng: Rng): number {
  if (cands.length === 0) throw noEndpoints();
  const keptIdx: number[] = [];
  const kept: CandidateView[] = [];
  for (let i = 0; i < cands.length; i++) {
    const c = cands[i];
    if (guard('filter', () => policy.filters.every((f) => f.keep(ctx, c)))) { keptIdx.push(i); kept.push(c); }
  }
  const n = kept.length;
  if (n === 0) throw allFiltered();
  const costs = new Float64Array(n);
  const scratch = new Float64Array(n);
  for (const s of policy.scorers) {
    scratch.fill(0);
    guard('scorer', () => s.score(ctx, kept, scratch));
    for (let i = 0; i < n; i++) costs[i] += scratch[i];
  }
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(costs[i])) {
      const w = kept[i].worker();
      throw policyNonFiniteCost(w.workerId, w.dpRank, costs[i]);
    }
  }
  const rows: PickerRow[] = kept.map((candidate, i) => ({ candidate, cost: () => costs[i] }));
  const row = guard('picker', () => policy.picker.pick(ctx, rows, rng));
  if (!Number.isInteger(row) || row < 0 || row >= n) throw policyBadRow(row, n);
  return keptIdx[row];
}

// ---- the built-in default as a policy ----------------------------------------------------------

/** Cost settings of `dynamo-default-cost-fn`; a `RouterConfig` satisfies it. */
export interface DefaultCostSettings {
  overlapScoreCredit: number; overlapScoreCreditDecay: number; prefillLoadScale: number;
  decodeActiveRequestWeight: number; hostCacheHitWeight: number; diskCacheHitWeight: number;
  sharedCacheMultiplier: number; routerTemperature: number;
}

/** The router-config defaults (Dynamo `lib/kv-router/src/scheduling/overlap.rs`, `lib/kv-router/src/scheduling/selector/default.rs`). */
export const DEFAULT_COST_SETTINGS: Readonly<DefaultCostSettings> = Object.freeze({
  overlapScoreCredit: 1.0, overlapScoreCreditDecay: 0.0, prefillLoadScale: 1.0, decodeActiveRequestWeight: 0.0,
  hostCacheHitWeight: 0.75, diskCacheHitWeight: 0.25, sharedCacheMultiplier: 0.0, routerTemperature: 0.0,
});

export const DEFAULT_POLICY_TYPE = 'dynamo-default-cost-fn';

/** Parameter names (snake_case, as in YAML) -> setting, with the allowed range. */
const PARAMS: Readonly<Record<string, [keyof DefaultCostSettings, number]>> = {
  overlap_score_credit: ['overlapScoreCredit', Infinity],
  overlap_score_credit_decay: ['overlapScoreCreditDecay', Infinity],
  prefill_load_scale: ['prefillLoadScale', Infinity],
  decode_active_request_weight: ['decodeActiveRequestWeight', Infinity],
  host_cache_hit_weight: ['hostCacheHitWeight', 1],
  disk_cache_hit_weight: ['diskCacheHitWeight', 1],
  shared_cache_multiplier: ['sharedCacheMultiplier', 1],
  router_temperature: ['routerTemperature', Infinity],
};

/** `parameters` over `base`; throws an Error naming an unknown or out-of-range parameter. */
export function defaultCostSettings(base: Readonly<DefaultCostSettings>, parameters: Readonly<Record<string, unknown>>): DefaultCostSettings {
  const s: DefaultCostSettings = { ...base };
  for (const [k, v] of Object.entries(parameters)) {
    const spec = PARAMS[k];
    if (spec === undefined) throw new Error(`${DEFAULT_POLICY_TYPE}: unknown parameter "${k}" (known: ${Object.keys(PARAMS).join(', ')})`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > spec[1]) {
      throw new Error(`${DEFAULT_POLICY_TYPE}: parameter "${k}" must be a finite number in [0, ${spec[1]}] (got ${String(v)})`);
    }
    s[spec[0]] = v;
  }
  return s;
}

/**
 * A factory for `dynamo-default-cost-fn` over `base` (usually the router config): scorer =
 * {@link defaultCosts}, picker = {@link pickByCost}. Per-request overrides win over policy
 * parameters, which win over `base`; the decay minimum is over the candidates the filters kept.
 */
export function createDefaultPolicyFactory(base: Readonly<DefaultCostSettings> = DEFAULT_COST_SETTINGS): PolicyFactory {
  return (_partition, parameters) => {
    const s = defaultCostSettings(base, parameters);
    const scorer: WorkerScorer = {
      score(ctx, cands, out) {
        const o = ctx.routerOverride();
        const p: CostParams = {
          blockSize: ctx.blockSize(), islTokens: ctx.promptTokens(), trackPrefillTokens: ctx.tracksPrefillTokens(),
          overlapScoreCredit: o.overlapScoreCredit ?? s.overlapScoreCredit, overlapScoreCreditDecay: s.overlapScoreCreditDecay,
          prefillLoadScale: o.prefillLoadScale ?? s.prefillLoadScale, decodeActiveRequestWeight: s.decodeActiveRequestWeight,
          hostCacheHitWeight: s.hostCacheHitWeight, diskCacheHitWeight: s.diskCacheHitWeight,
          sharedCacheMultiplier: o.sharedCacheMultiplier ?? s.sharedCacheMultiplier, preferredTaints: ctx.preferredTaints(),
        };
        defaultCosts(cands.map(candidateRow), p, out);
      },
    };
    const picker: WorkerPicker = {
      pick(ctx, rows, rng) {
        const costs = Float64Array.from(rows, (r) => r.cost());
        return pickByCost(costs, rows.length, ctx.routerTemperatureOverride() ?? s.routerTemperature, rng);
      },
    };
    return Object.freeze({ filters: Object.freeze([]), scorers: Object.freeze([scorer]), picker });
  };
}

/** `dynamo-default-cost-fn` over the spec defaults. */
export const defaultPolicyFactory: PolicyFactory = createDefaultPolicyFactory();

/** Policy factories by type name. */
export class PolicyRegistry {
  readonly #factories = new Map<string, PolicyFactory>();

  /** A registry holding `dynamo-default-cost-fn` over `base`. */
  static withBuiltins(base?: Readonly<DefaultCostSettings>): PolicyRegistry {
    return new PolicyRegistry().register(DEFAULT_POLICY_TYPE, createDefaultPolicyFactory(base));
  }

  /** Throws when `typeName` is empty or already registered. */
  register(typeName: string, factory: PolicyFactory): this {
    if (typeName.trim() === '') throw new Error('worker selection policy type name must not be empty');
    if (this.#factories.has(typeName)) throw new Error(`worker selection policy type "${typeName}" is already registered`);
    this.#factories.set(typeName, factory);
    return this;
  }

  has(typeName: string): boolean { return this.#factories.has(typeName); }

  names(): string[] { return [...this.#factories.keys()].sort(); }

  /** Runs the factory (once per partition); throws an Error naming an unknown type or a malformed policy. */
  create(typeName: string, partition: PolicyPartition, parameters: Readonly<Record<string, unknown>> = {}): WorkerSelectionPolicy {
    const f = this.#factories.get(typeName);
    if (f === undefined) {
      throw new Error(`unknown worker selection policy type "${typeName}" (registered: ${this.names().join(', ') || 'none'})`);
    }
    const p = f(partition, parameters);
    if (p === null || typeof p !== 'object' || !Array.isArray(p.filters) || !Array.isArray(p.scorers)
      || typeof p.picker?.pick !== 'function') {
      throw new Error(`worker selection policy type "${typeName}" returned a malformed policy (needs filters[], scorers[], picker.pick)`);
    }
    return p;
  }
}

/** Plain values of a {@link WorkerSelectionContext}; {@link selectionContext} wraps them. */
export interface ContextValues {
  promptTokens: number; blockSize: number; tracksPrefillTokens: boolean; modelName: string; routingGroup: string;
  sessionContext?: SessionContext; sessionId?: string; affinityTarget?: { workerId: bigint; dpRank?: number };
  expectedOutputTokens?: number; priorityJump?: number; strictPriority?: number;
  routerOverride?: Readonly<Partial<EffectiveRouterValues>>; preferredTaints?: Readonly<Record<string, number>>;
  isPathPlanning?: boolean;
  prefixWords?: Uint32Array;
}

const NO_WORDS = new Uint32Array(0);

/** A context over plain values (hosts and tests). */
export function selectionContext(v: ContextValues): WorkerSelectionContext {
  const override = v.routerOverride ?? {};
  return {
    promptTokens: () => v.promptTokens,
    requestBlocks: () => Math.ceil(v.promptTokens / v.blockSize),
    blockSize: () => v.blockSize,
    tracksPrefillTokens: () => v.tracksPrefillTokens,
    sessionContext: () => v.sessionContext,
    sessionId: () => v.sessionContext?.session_id ?? v.sessionId,
    affinityTarget: () => v.affinityTarget,
    expectedOutputTokens: () => v.expectedOutputTokens,
    priorityJump: () => v.priorityJump ?? 0,
    strictPriority: () => v.strictPriority ?? 0,
    routerTemperatureOverride: () => override.routerTemperature,
    routerOverride: () => override,
    preferredTaints: () => v.preferredTaints ?? {},
    isPathPlanning: () => v.isPathPlanning ?? false,
    modelName: () => v.modelName,
    routingGroup: () => v.routingGroup,
    prefixWords: () => v.prefixWords ?? NO_WORDS,
  };
}

/**
 * The built-in worker selector (Dynamo `lib/kv-router/src/scheduling/selector/default.rs`, Dynamo `DefaultWorkerSelector`): eligibility
 * filters, the per-candidate cost (logit, lower is better) and the picker. Pure functions over
 * candidate rows the caller builds, one per eligible `(worker_id, dp_rank)`; randomness is the
 * injected {@link Rng}. Isomorphic: no `node:` imports.
 *
 * Only the aggregated cost branch is implemented: the standalone service serves aggregated
 * workers only, so Dynamo's `worker_type == "decode" && !track && credit > 0` branch
 * (`max(0, decode_cost - credit) + active_request_cost`) never applies here.
 */
import { noEndpoints, pinnedNotAllowed } from '../errors.js';
import type { EffectiveRouterValues, RouterConfig } from '../config/config.js';
import type { Rng } from '../random.js';

/** One scoring row: a `(worker, dp_rank)` with its cache match and load projection (Dynamo `scheduling/selector/default.rs`, `sequences/`). */
export interface Candidate {
  workerId: bigint;
  dpRank: number;
  taints: readonly string[];
  /** Device-tier overlap blocks (or the effective overlap when no tier maps exist). */
  deviceBlocks: number;
  /** Host-tier blocks beyond the device match. */
  hostExtBlocks: number;
  /** Disk + external blocks beyond the host match. */
  diskExtBlocks: number;
  /** Shared-cache hit blocks beyond the device match. */
  sharedBeyondDeviceBlocks: number;
  /** `cached_tokens` (rounded, Dynamo `scheduling/overlap.rs`), for the effective prefill. */
  cachedTokens: number;
  /** False when the worker has no load tracking: the load fields below are then ignored. */
  hasLoad: boolean;
  activePrefillTokens: number;
  potentialDecodeBlocks: number;
  activeRequests: number;
  /** Booked requests whose `prefill_complete` has not been reported yet (queued or in prefill). */
  prefillPendingRequests: number;
  totalKvBlocks: number | null;
  maxNumBatchedTokens: number | null;
  /** Seconds the rank's oldest booking awaiting its first token has waited (0 when absent). */
  pendingSecs?: number;
  /** The fraction of recent time a booking on the rank waited for its first token (0 when absent). */
  busyFraction?: number;
  /** The rank's `max_num_seqs` (absent or null: not registered). */
  maxNumSeqs?: number | null;
  /** Context tokens the rank's live bookings hold, not deduplicated (0 when absent). */
  contextTokens?: number;
  /** Leading prompt blocks already held by the rank's live bookings (0 when absent). */
  activeOverlapBlocks?: number;
}

/** Everything the cost needs besides the rows: request values plus effective router settings. */
export interface CostParams {
  blockSize: number;
  islTokens: number;
  trackPrefillTokens: boolean;
  overlapScoreCredit: number;
  overlapScoreCreditDecay: number;
  prefillLoadScale: number;
  decodeActiveRequestWeight: number;
  hostCacheHitWeight: number;
  diskCacheHitWeight: number;
  sharedCacheMultiplier: number;
  /** `routing_constraints.preferred_taints`; empty = no multiplier. */
  preferredTaints: Readonly<Record<string, number>>;
}

/** The router-config fields the cost reads that a request cannot override. */
export type CostConfig = Pick<RouterConfig,
  'overlapScoreCreditDecay' | 'decodeActiveRequestWeight' | 'hostCacheHitWeight' | 'diskCacheHitWeight'>;

/** Builds {@link CostParams} from the configuration, the request's effective values and the request. */
export function costParams(
  cfg: CostConfig, eff: EffectiveRouterValues,
  req: { blockSize: number; islTokens: number; preferredTaints?: Readonly<Record<string, number>> },
): CostParams {
  return {
    blockSize: req.blockSize, islTokens: req.islTokens, trackPrefillTokens: eff.trackPrefillTokens,
    overlapScoreCredit: eff.overlapScoreCredit, overlapScoreCreditDecay: cfg.overlapScoreCreditDecay,
    prefillLoadScale: eff.prefillLoadScale, decodeActiveRequestWeight: cfg.decodeActiveRequestWeight,
    hostCacheHitWeight: cfg.hostCacheHitWeight, diskCacheHitWeight: cfg.diskCacheHitWeight,
    sharedCacheMultiplier: eff.sharedCacheMultiplier, preferredTaints: req.preferredTaints ?? {},
  };
}

/** Dynamo `scheduling/overlap.rs` `effective_prefill_tokens(isl, cached) = isl - min(cached, isl)`. */
export function effectivePrefillTokens(isl: number, cached: number): number {
  return isl - Math.min(Math.max(0, cached), isl);
}

/**
 * Request blocks without a tracking hash (a partial tail, or hashes the client did not send):
 * `ceil(isl / bs) - tracked`, added to a rank's projected decode blocks (Dynamo `lib/kv-router/src/scheduling/selector/default.rs`).
 */
export function untrackedBlocks(isl: number, blockSize: number, tracked: number): number {
  return Math.max(0, Math.ceil(isl / blockSize) - tracked);
}

/** `request_blocks = ceil(isl / block_size)` (at least 1, so the decay never divides by zero). */
export function requestBlocks(isl: number, blockSize: number): number {
  return Math.max(1, Math.ceil(isl / blockSize));
}

interface TaintInfo { readonly set: ReadonlySet<string>; readonly key: string }
const taintInfos = new WeakMap<readonly string[], TaintInfo>();

/**
 * A worker's taints as a set plus a key of their content, made once per taint list (a registered
 * worker's list is one array for its lifetime). A request checks each distinct taint list once
 * (memo by key) with one set lookup per requested taint, so the cost of its taint constraints does
 * not grow with the fleet when workers share their taints.
 */
function taintInfo(taints: readonly string[]): TaintInfo {
  let t = taintInfos.get(taints);
  if (t === undefined) {
    const set = new Set(taints);
    t = { set, key: [...set].sort().join('\u0000') };
    taintInfos.set(taints, t);
  }
  return t;
}

/** A key of a taint list's content: equal for two lists holding the same taints. */
export function taintKey(taints: readonly string[]): string { return taintInfo(taints).key; }

/** Whether a taint list holds every one of `required`. */
export function holdsTaints(taints: readonly string[], required: readonly string[]): boolean {
  const held = taintInfo(taints).set;
  for (const t of required) if (!held.has(t)) return false;
  return true;
}

/** `exp(-tanh(sum of weights of matched preferred taints))`, in [e^-1, e]; 1 when none match. */
export function preferredTaintMultiplier(taints: readonly string[], preferred: Readonly<Record<string, number>>): number {
  let sum = 0;
  const held = taintInfo(taints).set;
  // Iterate the (few) preferred taints so a taint listed twice on a worker counts once.
  for (const key in preferred) {
    if (Object.prototype.hasOwnProperty.call(preferred, key) && held.has(key)) sum += preferred[key];
  }
  return Math.exp(-Math.tanh(sum));
}

function hasAny(rec: Readonly<Record<string, number>>): boolean {
  for (const k in rec) if (Object.prototype.hasOwnProperty.call(rec, k)) return true;
  return false;
}

/**
 * Dynamo's cost (`scheduling/selector/default.rs`) of every candidate (lower is better), aligned with `cands`. The decay's
 * `min_active_prefill_tokens` is taken over all given candidates (the eligible set). Writes
 * into `out` when given (length ≥ `cands.length`) and returns it; allocates otherwise.
 */
export function defaultCosts(cands: readonly Candidate[], p: CostParams, out?: Float64Array): Float64Array {
  const n = cands.length;
  if (out !== undefined && out.length < n) throw new RangeError(`cost buffer holds ${out.length} rows, ${n} needed`);
  const costs = out ?? new Float64Array(n);
  const bs = p.blockSize;
  const track = p.trackPrefillTokens;
  const decayOn = track && p.overlapScoreCreditDecay > 0;
  let minActive = Infinity;
  if (decayOn) for (const c of cands) minActive = Math.min(minActive, c.hasLoad ? c.activePrefillTokens : 0);
  const reqBlocks = requestBlocks(p.islTokens, bs);
  const taintsOn = hasAny(p.preferredTaints);
  const multipliers = new Map<string, number>(); // per distinct taint list
  for (let i = 0; i < n; i++) {
    const c = cands[i];
    const active = c.hasLoad ? c.activePrefillTokens : 0;
    const rawPrefillTokens = !track ? 0
      : c.hasLoad ? active + effectivePrefillTokens(p.islTokens, c.cachedTokens) + c.cachedTokens
      : p.islTokens;
    const decay = decayOn ? 1 / (1 + (p.overlapScoreCreditDecay * ((active - minActive) / bs)) / reqBlocks) : 1;
    const credit = p.overlapScoreCredit * decay * c.deviceBlocks
      + p.hostCacheHitWeight * c.hostExtBlocks
      + p.diskCacheHitWeight * c.diskExtBlocks
      + p.sharedCacheMultiplier * c.sharedBeyondDeviceBlocks;
    const decode = c.hasLoad ? c.potentialDecodeBlocks : 0;
    const activeRequestCost = p.decodeActiveRequestWeight * (c.hasLoad ? c.activeRequests : 0);
    const adjusted = Math.max(0, rawPrefillTokens / bs - credit);
    const logit = p.prefillLoadScale * adjusted + decode + activeRequestCost;
    if (taintsOn) {
      const key = taintInfo(c.taints).key;
      let m = multipliers.get(key);
      if (m === undefined) multipliers.set(key, m = preferredTaintMultiplier(c.taints, p.preferredTaints));
      costs[i] = logit * m;
    } else {
      costs[i] = logit;
    }
  }
  return costs;
}

/**
 * Dynamo's picker (`scheduling/selector/default.rs`); returns a row index in `[0, n)`.
 * - `temperature <= 0`: the minimum cost; ties broken uniformly by reservoir sampling over the
 *   rows in order (`tie_count += 1; replace if rand(0..tie_count) == 0`). Draws only on ties.
 * - `temperature > 0`: softmax over min–max-normalised costs,
 *   `p_i ∝ exp(-(c_i - c_min) / ((c_max - c_min) * T))`, all equal ⇒ uniform; when the range is
 *   not finite the costs are first divided by `max(|c_min|, |c_max|)`. One draw `u ∈ [0,1)`: the
 *   first row whose cumulative probability is ≥ u, else the last row.
 * Throws {@link noEndpoints} (503) when `n` is 0.
 */
export function pickByCost(costs: ArrayLike<number>, n: number, temperature: number, rng: Rng): number {
  if (n <= 0) throw noEndpoints();
  if (n === 1) return 0;
  if (!(temperature > 0)) {
    let best = 0, bestCost = costs[0], ties = 1;
    for (let i = 1; i < n; i++) {
      const c = costs[i];
      if (c < bestCost) { best = i; bestCost = c; ties = 1; }
      else if (c === bestCost) {
        ties++;
        if (Math.floor(rng.next() * ties) === 0) best = i;
      }
    }
    return best;
  }
  let cmin = Infinity, cmax = -Infinity;
  for (let i = 0; i < n; i++) { cmin = Math.min(cmin, costs[i]); cmax = Math.max(cmax, costs[i]); }
  let scale = 1;
  if (!Number.isFinite(cmax - cmin)) {
    scale = Math.max(Math.abs(cmin), Math.abs(cmax));
    cmin /= scale; cmax /= scale;
  }
  const range = cmax - cmin;
  const u = rng.next();
  if (!(range > 0)) {
    // All equal: uniform, sampled the same way (cumulative (i+1)/n >= u).
    for (let i = 0; i < n; i++) if ((i + 1) / n >= u) return i;
    return n - 1;
  }
  const denom = range * temperature;
  const weight = (i: number): number => Math.exp(-((costs[i] / scale) - cmin) / denom);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += weight(i);
  let cum = 0;
  for (let i = 0; i < n; i++) {
    cum += weight(i) / sum;
    if (cum >= u) return i;
  }
  return n - 1;
}

/** The request's eligibility inputs (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). */
export interface EligibilityRequest {
  /**
   * Allow-set of worker ids; absent = every worker, empty = none (Dynamo's
   * `caller_allows_worker_id`, lib/kv-router/src/scheduling/filter.rs).
   */
  allowedWorkerIds?: readonly bigint[];
  /** A candidate must carry every one of these taints. */
  requiredTaints: readonly string[];
  /** Exact `(worker_id, dp_rank)` pin. */
  pinned?: { workerId: bigint; dpRank: number };
  /** Exclusive target: the worker, and the rank when given. */
  affinityTarget?: { workerId: bigint; dpRank?: number };
}

/**
 * The filters applied before scoring (Dynamo `scheduling/selector/default.rs`): allowed ids, required taints, pinned worker/rank,
 * affinity target. Returns the kept rows in order (possibly none; the caller maps that to
 * `noEndpoints`). Throws {@link pinnedNotAllowed} (400) when the pinned worker is outside the
 * allow-set (an empty one too), before any filtering.
 */
export function eligible(cands: readonly Candidate[], req: EligibilityRequest): Candidate[] {
  const allowed = req.allowedWorkerIds !== undefined ? new Set(req.allowedWorkerIds) : undefined;
  const pin = req.pinned, target = req.affinityTarget, required = req.requiredTaints;
  if (pin !== undefined && allowed !== undefined && !allowed.has(pin.workerId)) throw pinnedNotAllowed(pin.workerId);
  const out: Candidate[] = [];
  const satisfied = new Map<string, boolean>(); // required taints, per distinct taint list
  for (const c of cands) {
    if (allowed !== undefined && !allowed.has(c.workerId)) continue;
    if (pin !== undefined && (c.workerId !== pin.workerId || c.dpRank !== pin.dpRank)) continue;
    if (target !== undefined && (c.workerId !== target.workerId
      || (target.dpRank !== undefined && c.dpRank !== target.dpRank))) continue;
    let ok = true;
    if (required.length > 0) {
      const info = taintInfo(c.taints);
      const known = satisfied.get(info.key);
      if (known === undefined) {
        for (const t of required) if (!info.set.has(t)) { ok = false; break; }
        satisfied.set(info.key, ok);
      } else {
        ok = known;
      }
    }
    if (ok) out.push(c);
  }
  return out;
}

/**
 * The `llmd` routing policy: llm-d's inference scheduler (the Gateway API Inference Extension
 * endpoint picker as llm-d configures it) in the profile of its "precise prefix cache aware"
 * guide. Each candidate rank (llm-d's "pod"; here one `(worker_id, dp_rank)`) gets
 *
 *   score  = prefix_weight x P + kv_weight x K + queue_weight x Q      (each of P, K, Q clipped to [0, 1])
 *   P      = min(1, matched / floor(prompt tokens / block size))       (0 for a prompt under one block)
 *   matched = device blocks + cpu_weight x host blocks + disk_weight x disk blocks, the prompt's
 *            longest prefix the rank holds, each block at the weight of the best tier holding it
 *   K      = 1 - KV usage                                              (usage 0 without total_kv_blocks)
 *   Q      = (max q - q) / (max q - min q) over the candidates, 1 when every q is equal
 *
 * and the highest score wins, exact ties at random (the picker shuffles, then sorts stably).
 * Stateless: nothing is kept between requests.
 *
 * Sources (read 2026-12-05; repository, path, commit):
 * - llm-d/llm-d-inference-scheduler main 520af478 (2026-05-17), pkg/epp/framework/plugins/scheduling/:
 *   scorer/preciseprefixcache/precise_prefix_cache.go `Score`, `getScores` (total blocks =
 *   floor(tokens / blockSize)) and utils.go `absoluteScoredPods` (P; since e6f6b84, #1107,
 *   2026-05-14; v0.8.0 normalised min-max over the pods instead: `prefix_min_max=1`);
 *   scorer/queuedepth/queue.go `Score` (Q); scorer/kvcacheutilization/kvcache_utilization.go
 *   `Score` (K); picker/maxscore/picker.go `Pick` with picker/common.go `ShuffleScoredEndpoints`;
 *   pkg/epp/scheduling/scheduler_profile.go `runScorerPlugins` (the weighted sum of clipped
 *   scores, in profile order) and `enforceScoreRange`.
 * - llm-d/llm-d-kv-cache v0.8.0 (the scheduler's go.mod): pkg/kvcache/kvblock_scorer.go
 *   `LongestPrefixScorer.Score` (consecutive blocks from the first, each at the highest weight of
 *   the tiers the pod holds it on; a tier the backend list does not name weighs 1) and
 *   pkg/kvcache/backend.go `DefaultKVCacheBackendConfig` (gpu 1.0, cpu 0.8).
 * - llm-d/llm-d 955190d9, guides/precise-prefix-cache-aware/scheduler/precise-prefix-cache-aware.values.yaml:
 *   precise-prefix-cache-scorer 2.0, kv-cache-utilization-scorer 1.0, queue-scorer 1.0,
 *   max-score-picker, behind decode-filter and the tokenizer.
 *
 * What the service cannot observe, and what stands in for it:
 * - The prefix scorer reads llm-d's index of the engines' KV events; here the KV index's tiered
 *   match per rank (device, then the host continuation, then disk and external), fed by the same
 *   events (or, without events, the approximate index learned from bookings). llm-d continues a
 *   pod's chain through any tier at each block; our host and disk counts continue the device
 *   match, so a device block after a host-only one is not counted here.
 * - Q reads vLLM's `num_requests_waiting`; here the rank's booked requests whose
 *   `prefill_complete` has not been reported (`prefillPendingRequests`). A request vLLM has begun
 *   to prefill counts as running there and still as pending here; the min-max normalisation
 *   cancels such an offset where ranks carry it alike. Active requests would be further off:
 *   decoding requests are not in vLLM's waiting queue (their memory is what K sees).
 * - K reads vLLM's `kv_cache_usage_perc` (blocks held by running requests over all blocks); here
 *   the blocks booked requests hold over `total_kv_blocks` (`decodeCostBlocks`, which includes
 *   this request's own new blocks: the same on every rank not already running its prefix).
 * - Metrics llm-d scrapes (every 50 ms by default) are exact here: the service's bookings.
 * - The decode filter (keeps pods labelled decode / prefill-decode, or unlabelled) keeps every
 *   rank: the service's workers are aggregated. The tokenizer plugin is the client's token_ids.
 *   Speculative indexing (routed prompts entered in the index for 2 s) is the core's predicted
 *   side index (`DYN_ROUTER_PREDICTED_TTL_SECS=2`), which this policy's device match includes.
 */
import { pickByCost } from '../selector.js';
import { WorkerInputs, type CandidateView, type WorkerPicker, type WorkerScorer, type WorkerSelectionContext, type WorkerSelectionPolicy } from '../policy.js';
import { policyParams } from '../routing-policy.js';

/** `llmd`'s parameters (defaults in select/routing-policy.ts). */
export interface LlmdParams {
  prefix_weight: number; kv_weight: number; queue_weight: number;
  cpu_weight: number; disk_weight: number; prefix_min_max: number;
}

/** A score clipped to [0, 1] before it is weighted (scheduler_profile.go `enforceScoreRange`). */
const clip01 = (x: number): number => (x < 0 ? 0 : x > 1 ? 1 : x);

/** The rank's longest cached prefix of the prompt in blocks, lower tiers at their weights (`LongestPrefixScorer`). */
function matchedBlocks(c: CandidateView, p: LlmdParams): number {
  return c.deviceOverlapBlocks() + p.cpu_weight * c.hostOverlapBlocks() + p.disk_weight * c.diskOverlapBlocks();
}

/** P per candidate into `out`: matched / floor(tokens / block size), or v0.8.0's min-max with `prefix_min_max`. */
export function prefixScores(ctx: WorkerSelectionContext, cands: readonly CandidateView[], p: LlmdParams, out: Float64Array): void {
  const n = cands.length;
  if (p.prefix_min_max === 1) {
    // v0.8.0 `indexedScoresToNormalizedScoredPods`: over the pods the index matched at all
    let min = Infinity, max = -Infinity;
    for (let i = 0; i < n; i++) {
      if (!(cands[i].deviceOverlapBlocks() + cands[i].hostOverlapBlocks() + cands[i].diskOverlapBlocks() > 0)) continue;
      const s = matchedBlocks(cands[i], p);
      min = Math.min(min, s); max = Math.max(max, s);
    }
    for (let i = 0; i < n; i++) {
      const c = cands[i];
      const hit = c.deviceOverlapBlocks() + c.hostOverlapBlocks() + c.diskOverlapBlocks() > 0;
      out[i] = !hit ? 0 : min === max ? 1 : (matchedBlocks(c, p) - min) / (max - min);
    }
    return;
  }
  const total = Math.floor(ctx.promptTokens() / ctx.blockSize());
  for (let i = 0; i < n; i++) out[i] = total <= 0 ? 0 : Math.min(1, matchedBlocks(cands[i], p) / total);
}

/** K per candidate into `out`: 1 - KV usage (usage 0 where `total_kv_blocks` is unknown). */
export function kvUtilizationScores(cands: readonly CandidateView[], out: Float64Array): void {
  for (let i = 0; i < cands.length; i++) {
    const total = cands[i].totalKvBlocks();
    out[i] = 1 - (total ? cands[i].decodeCostBlocks() / total : 0);
  }
}

/** Q per candidate into `out`: (max - q) / (max - min) of the pending requests, 1 when all are equal. */
export function queueScores(cands: readonly CandidateView[], out: Float64Array): void {
  let min = Infinity, max = -Infinity;
  for (const c of cands) { const q = c.prefillPendingRequests(); min = Math.min(min, q); max = Math.max(max, q); }
  for (let i = 0; i < cands.length; i++) out[i] = max === min ? 1 : (max - cands[i].prefillPendingRequests()) / (max - min);
}

/**
 * One weighted scorer as a cost: the scores negated, so the summed cost is minus llm-d's weighted
 * score (negation is exact, so exact ties stay exact ties).
 */
function weighted(inputs: number, weight: number, fill: (ctx: WorkerSelectionContext, cands: readonly CandidateView[], out: Float64Array) => void): WorkerScorer {
  return {
    requiredWorkerInputs: () => inputs,
    score(ctx, cands, out) {
      fill(ctx, cands, out);
      for (let i = 0; i < cands.length; i++) out[i] = -(clip01(out[i]) * weight);
    },
  };
}

/** The highest score (lowest cost); exact ties uniformly at random, as the shuffle before the stable sort gives. */
const maxScorePicker: WorkerPicker = {
  requiredWorkerInputs: () => WorkerInputs.NONE,
  pick: (_ctx, rows, rng) => pickByCost(Float64Array.from(rows, (r) => r.cost()), rows.length, 0, rng),
};

/** The `llmd` policy (parameters over their defaults; throws an Error naming a bad one). */
export function createLlmdPolicy(params: Readonly<Record<string, unknown>>): WorkerSelectionPolicy {
  const p = policyParams('llmd', params) as unknown as LlmdParams;
  // profile order: precise-prefix-cache-scorer, kv-cache-utilization-scorer, queue-scorer
  const scorers = Object.freeze([
    weighted(WorkerInputs.CACHE, p.prefix_weight, (ctx, cands, out) => prefixScores(ctx, cands, p, out)),
    weighted(WorkerInputs.LOAD, p.kv_weight, (_ctx, cands, out) => kvUtilizationScores(cands, out)),
    weighted(WorkerInputs.LOAD, p.queue_weight, (_ctx, cands, out) => queueScores(cands, out)),
  ]);
  return Object.freeze({ filters: Object.freeze([]), scorers, picker: maxScorePicker });
}

/**
 * The `ray_prefix_affinity` routing policy: Ray Serve LLM's `PrefixCacheAffinityRouter`
 * (ray-project/ray, `python/ray/llm/_internal/serve/routing_policies/prefix_aware/
 * prefix_aware_router.py` and `prefix_tree.py`, read in the Ray 2.58.0 release wheel; the same
 * rule as the newest source read, where `imbalanced_threshold` became `inf` in ray-project/ray
 * PR #59390, Dec 2025), on the core's candidates. Line numbers below are Ray 2.58.0's.
 *
 * For each request (`choose_replicas`, router lines 337-391; `_prefix_match_best_replicas`,
 * 208-290):
 * 1. If the candidates' queue lengths differ by more than `imbalanced_threshold`
 *    (`max - min > threshold`, 253-255), power of two choices (pow_2_router.py 82-106): two
 *    distinct random candidates, the one with the shorter queue, the first drawn on a tie
 *    (request_router.py 1028-1084 keeps the first of equal queues).
 * 2. Else match the prompt in the tree of routed prompts (prefix_tree.py `prefix_match`,
 *    376-445, over the candidates). Match rate = matched / prompt length (268). At or above
 *    `match_rate_threshold` the chosen set is the candidates owning the deepest matched block;
 *    below it, the candidates whose trees are smallest (`get_smallest_tenants`, 546-562).
 * 3. Of the chosen set, the one with the shortest queue, the first in candidate order on a tie
 *    (Ray returns the set to `_select_from_candidate_replicas`, request_router.py 1028-1084,
 *    which keeps the first lowest queue).
 * When the request is booked (`on_request_routed`, 394-418) its prompt is inserted for the
 * chosen rank; a rank that leaves loses its tree (`update_replicas` / `on_replica_actor_died`,
 * 293-324). With `do_eviction=1` (off by default, as in Ray) every `eviction_interval_secs`
 * each rank holding more than `eviction_threshold_tokens` loses its least recently routed
 * blocks down to `eviction_target_tokens` (`_run_eviction_loop`, prefix_tree.py 591-601).
 *
 * What differs, and why:
 * - Ray matches characters of the prompt text; here the prompt's token blocks (the chained block
 *   hashes), so a match counts whole blocks and the rate is matched blocks x block size over the
 *   prompt's tokens. Ray's character thresholds become tokens at 4 characters a token
 *   (`eviction_threshold_chars` 400,000 -> `eviction_threshold_tokens` 100,000; 360,000 ->
 *   `eviction_target_tokens` 90,000), compared with each rank's blocks x block size.
 * - A replica is one (worker_id, dp_rank) of the partition; its queue length is the bookings the
 *   service holds on it not yet freed (`activeRequests()`), exact, where Ray reads a cache of
 *   probed queue lengths and skips replicas at `max_ongoing_requests` (no such cap here).
 * - Ray's tenants are every replica of the deployment; here every rank seen as a candidate or
 *   booked. The smallest tenants are looked for among this request's candidates (Ray's
 *   candidates are all its replicas unless locality or multiplexing narrows them).
 * - Ray's eviction runs on a thread; here it runs on the next selection or booking once the
 *   interval has passed, which is the same while requests arrive (the tree changes only then).
 * - Ray's tree has no bound with eviction off; this one holds at most MAX_OWNED_BLOCKS (block,
 *   rank) entries and past that evicts the largest rank's oldest blocks the same way.
 * - An empty prompt divides by zero in Ray (268); here its match rate is 0.
 */
import { rankKeyOf } from '../../index/slots.js';
import { MS, type Clock, type Rng } from '../../random.js';
import { WorkerInputs, type BookedPrompt, type PickerRow, type PolicyPartition, type WorkerPicker, type WorkerSelectionPolicy } from '../policy.js';
import { RAY_PREFIX_AFFINITY_DEFAULTS, policyParams } from '../routing-policy.js';
import { RoutedPrefixTree, type Tenant } from './routed-prefix-tree.js';

export type RayPrefixAffinityParams = { -readonly [K in keyof typeof RAY_PREFIX_AFFINITY_DEFAULTS]: number };

/** What the policy reads of its partition: the clock (insert times, the eviction interval). */
export interface RayPrefixAffinityInputs { readonly clock: Clock }

const queue = (rows: readonly PickerRow[], i: number): number => rows[i].candidate.activeRequests();

/** Power of two choices (Ray's `PowerOfTwoChoicesRequestRouter`): the shorter queue of two distinct random rows, the first drawn on a tie. */
export function powerOfTwo(rows: readonly PickerRow[], rng: Rng): number {
  const n = rows.length;
  if (n === 1) return 0;
  const i = Math.floor(rng.next() * n);
  let j = Math.floor(rng.next() * (n - 1));
  if (j >= i) j++;
  return queue(rows, j) < queue(rows, i) ? j : i;
}

/** The policy, with its tree of routed prompts (tests and inspection read it). */
export type RayPrefixAffinityPolicy = WorkerSelectionPolicy & { readonly tree: RoutedPrefixTree };

/** The `ray_prefix_affinity` policy of one partition. */
export function createRayPrefixAffinityPolicy(partition: PolicyPartition, params: Readonly<Record<string, unknown>>,
  inputs: RayPrefixAffinityInputs): RayPrefixAffinityPolicy {
  const p = policyParams('ray_prefix_affinity', params) as RayPrefixAffinityParams;
  const bs = partition.blockSize, clock = inputs.clock;
  const tree = new RoutedPrefixTree();
  // a rank holds more than the threshold when blocks x bs > threshold tokens; it keeps at most
  // floor(target / bs) blocks (Ray removes at least `count - target`)
  const thresholdBlocks = p.eviction_threshold_tokens / bs, targetBlocks = Math.floor(p.eviction_target_tokens / bs);
  let nextEviction = clock.now() + p.eviction_interval_secs * MS;
  const maybeEvict = (): void => {
    if (p.do_eviction === 0) return;
    const now = clock.now();
    if (now < nextEviction) return;
    tree.evictionPass(thresholdBlocks, targetBlocks);
    nextEviction = now + p.eviction_interval_secs * MS;
  };
  // each rank's tenant by worker id then dp rank, so a pick builds no rank key string (at 128
  // ranks that was 6% of a selection); as bounded as the tenants
  const byWorker = new Map<bigint, Map<number, Tenant>>();
  const tenantFor = (workerId: bigint, dpRank: number): Tenant => {
    let ranks = byWorker.get(workerId);
    if (ranks === undefined) byWorker.set(workerId, ranks = new Map());
    let t = ranks.get(dpRank);
    if (t === undefined) ranks.set(dpRank, t = tree.addTenant(rankKeyOf(workerId, dpRank)));
    return t;
  };
  const tenantOf = (row: PickerRow): Tenant => {
    const w = row.candidate.worker();
    return tenantFor(w.workerId, w.dpRank);
  };

  const picker: WorkerPicker = {
    requiredWorkerInputs: () => WorkerInputs.LOAD,
    pick(ctx, rows, rng) {
      maybeEvict();
      const n = rows.length;
      let hi = -Infinity, lo = Infinity;
      for (let i = 0; i < n; i++) { const q = queue(rows, i); hi = Math.max(hi, q); lo = Math.min(lo, q); }
      if (hi - lo > p.imbalanced_threshold) return powerOfTwo(rows, rng);
      const cands = rows.map(tenantOf);
      const words = ctx.prefixWords(), nBlocks = words.length >> 1;
      const m = tree.match(words, nBlocks, cands);
      const tokens = Math.max(ctx.promptTokens(), nBlocks * bs);
      const rate = tokens > 0 ? (m.blocks * bs) / tokens : 0;
      let chosen = m.owners;
      if (rate < p.match_rate_threshold) {
        let min = Infinity;
        for (const c of cands) min = Math.min(min, c.size);
        chosen = [];
        for (let i = 0; i < n; i++) if (cands[i].size === min) chosen.push(i);
      }
      if (chosen.length === 0) return powerOfTwo(rows, rng); // Ray's fallback; candidates are never empty here
      let best = chosen[0];
      for (const i of chosen) if (queue(rows, i) < queue(rows, best)) best = i;
      return best;
    },
  };
  return Object.freeze({
    filters: Object.freeze([]), scorers: Object.freeze([]), picker,
    onBooked(b: BookedPrompt) {
      maybeEvict();
      tree.insert(tenantFor(b.workerId, b.dpRank), b.prefixWords, b.prefixWords.length >> 1, clock.now());
    },
    onRankRemoved(workerId: bigint, dpRank: number) {
      const ranks = byWorker.get(workerId);
      ranks?.delete(dpRank);
      if (ranks?.size === 0) byWorker.delete(workerId);
      tree.removeTenant(rankKeyOf(workerId, dpRank));
    },
    tree,
  });
}

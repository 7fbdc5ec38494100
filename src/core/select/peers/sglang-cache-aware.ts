/**
 * `sglang_cache_aware`: the `cache_aware` policy of SGLang's router, the SGLang Model Gateway
 * (lightseekorg/smg `model_gateway/src/policies/cache_aware.rs` at 73da68ca, 2026-08-07; the
 * gateway left sgl-project/sglang `sgl-model-gateway/` for that repository with its history in
 * January 2026). Per request, over the candidate ranks:
 *
 * 1. load = the router's own count of the rank's running requests (SGLang's `Worker::load()`,
 *    raised when a request is sent and lowered when its response ends): here the rank's bookings
 *    not yet freed (`activeRequests()`). The fleet is imbalanced when
 *    `max - min > balance_abs_threshold` and `max > min x balance_rel_threshold` (f32 arithmetic
 *    as in the source); then the request goes to the least loaded rank, and is still inserted
 *    into the tree for it.
 * 2. Otherwise the prompt is matched in the tree of previously routed prompts (./token-tree.ts,
 *    the source's tree for tokenized requests, pages = KV blocks). match rate = matched tokens
 *    (whole blocks x block size) / prompt tokens. Above `cache_threshold` the request goes to the
 *    tenant of the longest match, else to the least loaded rank; either way the prompt is
 *    inserted for the rank chosen. The least loaded rank is the lowest (load, requests routed to
 *    it so far, position) (the source's tie-break since smg #1714; sglang's own copy took the
 *    first of equal loads). The source's comment still says "smallest tree" for the miss branch:
 *    that was SGLang until sglang #14650 (December 2025) changed it to the least loaded worker.
 * 3. A match whose tenant is not among the candidates (the source: not healthy) sends the request
 *    to the first candidate and inserts nothing.
 *
 * Every `eviction_interval_secs` (read off the core's clock, so the simulator's time drives it) each
 * rank's tree is evicted, least recently used leaves first, down to `max_tree_size`. The source
 * compares that number with tokens in its token tree (characters in its string tree for HTTP
 * text); here the limit is `floor(max_tree_size / block_size)` blocks, the same bound since sizes
 * are whole pages. State is bounded: the tree by that limit per rank at every eviction, and, ours
 * alone (the source grows freely between evictions), a rank whose count passes twice the limit is
 * evicted at once; a removed rank's entries are dropped (./token-tree.ts, `removeTenant`); the
 * routed-request counts are one per rank.
 *
 * The tree and the counts change when a selection is booked (`onBooked`), never on a query-only
 * /select: the pick records its branch per prompt (a WeakMap keyed by the prompt's word array,
 * which the booking carries), and the booking replays the source's side effects for that branch
 * (the miss/hit branches match-and-insert, touching the matched tenant as the source's match
 * does; the imbalanced branch inserts only; the stale-tenant fallback touches and inserts
 * nothing). A booking the policy did not choose (an explicit reservation) is inserted as routed.
 * Not implemented: the source's event-driven mode (gRPC workers publishing KV events; our `kv`
 * and `ttft` policies read the KV index) and its KV-usage imbalance triggers (off by default).
 * Isomorphic: no `node:` imports.
 */
import { rankKeyOf } from '../../index/slots.js';
import type { Clock } from '../../random.js';
import { MS } from '../../random.js';
import { WorkerInputs, type PolicyPartition, type WorkerPicker, type WorkerSelectionPolicy } from '../policy.js';
import { policyParams, ROUTING_POLICY_PARAMS } from '../routing-policy.js';
import { blockKeys, TokenTree } from './token-tree.js';

/** Parameters: the router's flags in snake_case, defaults and bounds in select/routing-policy.ts. */
type Params = { -readonly [K in keyof typeof ROUTING_POLICY_PARAMS.sglang_cache_aware.defaults]: number };

/** Which branch a pick took, kept until its booking. */
interface Pick { readonly rank: string; readonly branch: 'imbalanced' | 'cache' | 'fallback' }

const f32 = Math.fround;

/** The policy of one partition; `clock` drives the periodic eviction. */
export function createSglangCacheAwarePolicy(partition: PolicyPartition, params: Readonly<Record<string, unknown>>,
  inputs: { readonly clock: Clock }): WorkerSelectionPolicy {
  const p = policyParams('sglang_cache_aware', params) as Params;
  const bs = partition.blockSize;
  const limit = Math.floor(p.max_tree_size / bs);
  const interval = p.eviction_interval_secs * MS;
  const tree = new TokenTree();
  /** Requests routed to each rank (the source's `processed_requests`), bounded by the ranks. */
  const processed = new Map<string, number>();
  const picks = new WeakMap<Uint32Array, Pick>();
  let nextEviction = inputs.clock.now() + interval;

  /** The periodic eviction thread, run lazily: due ticks collapse into one eviction (it is idempotent). */
  const evictIfDue = (): void => {
    const now = inputs.clock.now();
    if (now < nextEviction) return;
    tree.evictBySize(limit);
    nextEviction += interval * (Math.floor((now - nextEviction) / interval) + 1);
  };

  const picker: WorkerPicker = {
    requiredWorkerInputs: () => WorkerInputs.LOAD,
    pick(ctx, rows) {
      evictIfDue();
      let min = Infinity, max = 0, best = 0, bestLoad = Infinity, bestDone = Infinity;
      const keys: string[] = [];
      for (let i = 0; i < rows.length; i++) {
        const c = rows[i].candidate, w = c.worker(), load = c.activeRequests();
        const key = rankKeyOf(w.workerId, w.dpRank), done = processed.get(key) ?? 0;
        keys.push(key);
        min = Math.min(min, load);
        max = Math.max(max, load);
        if (load < bestLoad || (load === bestLoad && done < bestDone)) { best = i; bestLoad = load; bestDone = done; }
      }
      const words = ctx.prefixWords();
      if (max - min > p.balance_abs_threshold && f32(max) > f32(f32(min) * f32(p.balance_rel_threshold))) {
        picks.set(words, { rank: keys[best], branch: 'imbalanced' });
        return best;
      }
      const m = tree.match(blockKeys(words));
      const isl = ctx.promptTokens();
      const rate = isl === 0 ? 0 : f32(f32(m.blocks * bs) / f32(isl));
      let row = best;
      if (rate > f32(p.cache_threshold)) {
        row = m.tenant === null ? -1 : keys.indexOf(m.tenant);
        if (row < 0) {
          picks.set(words, { rank: keys[0], branch: 'fallback' });
          return 0;
        }
      }
      picks.set(words, { rank: keys[row], branch: 'cache' });
      return row;
    },
  };

  return Object.freeze({
    filters: Object.freeze([]),
    scorers: Object.freeze([]),
    picker,
    onBooked(b) {
      evictIfDue();
      const rank = rankKeyOf(b.workerId, b.dpRank), keys = blockKeys(b.prefixWords);
      const pick = picks.get(b.prefixWords);
      picks.delete(b.prefixWords);
      const branch = pick?.rank === rank ? pick.branch : 'imbalanced'; // not our pick: routed there all the same
      if (branch === 'fallback') { tree.matchAndInsert(keys, null); return; }
      if (branch === 'cache') tree.matchAndInsert(keys, rank);
      else tree.insert(keys, rank);
      processed.set(rank, (processed.get(rank) ?? 0) + 1);
      if ((tree.sizes().get(rank) ?? 0) > 2 * limit) tree.evictTenant(rank, limit);
    },
    onRankRemoved(workerId, dpRank) {
      const rank = rankKeyOf(workerId, dpRank);
      tree.removeTenant(rank);
      processed.delete(rank);
    },
  } satisfies WorkerSelectionPolicy);
}

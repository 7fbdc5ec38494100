/**
 * `sglang_cache_aware` (src/core/select/peers/sglang-cache-aware.ts), each branch hand-worked
 * against lightseekorg/smg `model_gateway/src/policies/cache_aware.rs` at 73da68ca (line numbers
 * below), through the policy runner, plus its parameters and a simulator run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSglangCacheAwarePolicy } from '../../../../src/core/select/peers/sglang-cache-aware.js';
import { parseRoutingPolicy } from '../../../../src/core/select/routing-policy.js';
import { policyInputs, runPolicy, selectionContext, WorkerInputs, type CandidateView, type WorkerSelectionPolicy } from '../../../../src/core/select/policy.js';
import { parseRouterConfig } from '../../../../src/core/config/config.js';
import { seededRng } from '../../../../src/core/random.js';
import { simulate } from '../../../../src/sim/simulate.js';
import { ManualClock } from '../core-helpers.js';
import { conversationTrace } from '../../sim/sim-helpers.js';

const BS = 16;

/** A rank with `load` running requests. */
function cand(workerId: number, load: number): CandidateView {
  return {
    worker: () => ({ workerId: BigInt(workerId), dpRank: 0, taints: [] }),
    deviceOverlapBlocks: () => 0, hostOverlapBlocks: () => 0, diskOverlapBlocks: () => 0, accountingCacheEstimate: () => 0,
    hasTierMatches: () => false, sharedHits: () => 0, isAvailable: () => true, activePrefillTokens: () => 0,
    decodeCostBlocks: () => 0, activeRequests: () => load, prefillPendingRequests: () => 0, totalKvBlocks: () => null,
    maxNumBatchedTokens: () => null, maxNumSeqs: () => null, busyFraction: () => 0, pendingSeconds: () => 0, contextTokens: () => 0,
    activeOverlapBlocks: () => 0,
  };
}

/** A prompt of `blocks` (block i keyed `base + i`, chained as tracking hashes are) and `tokens` tokens. */
function prompt(keys: number[], tokens = keys.length * BS): { words: Uint32Array; tokens: number } {
  const words = new Uint32Array(2 * keys.length);
  keys.forEach((key, i) => { words[2 * i] = key; });
  return { words, tokens };
}
const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

function harness(params: Record<string, number> = {}) {
  const clock = new ManualClock();
  const policy: WorkerSelectionPolicy = createSglangCacheAwarePolicy({ modelName: 'm', routingGroup: 'g', blockSize: BS }, params, { clock });
  const rng = seededRng(1);
  /** Picks for `p` over ranks with these loads (worker ids 1..n unless `ids`); books it when `book`. */
  const route = (p: { words: Uint32Array; tokens: number }, loads: number[], o: { book?: boolean; ids?: number[] } = {}): number => {
    const ids = o.ids ?? loads.map((_, i) => i + 1);
    const ctx = selectionContext({ promptTokens: p.tokens, blockSize: BS, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g', prefixWords: p.words });
    const row = runPolicy(policy, ctx, ids.map((id, i) => cand(id, loads[i])), rng);
    if (o.book ?? true) policy.onBooked!({ workerId: BigInt(ids[row]), dpRank: 0, prefixWords: p.words, promptTokens: p.tokens });
    return ids[row];
  };
  return { policy, clock, route };
}

test('reads the load only (no KV-index overlap), through the picker alone', () => {
  const { policy } = harness();
  assert.equal(policyInputs(policy), WorkerInputs.LOAD);
  assert.equal(policy.scorers.length, 0);
});

test('a miss goes to the least loaded rank; equal loads: fewest routed so far, then the first (select_worker 780-800, smg #1714)', () => {
  const { route } = harness();
  assert.equal(route(prompt(range(100, 4)), [3, 1, 1]), 2, 'least loaded');
  assert.equal(route(prompt(range(200, 4)), [0, 0, 0]), 1, 'equal loads, none routed to 1 or 3: the first');
  assert.equal(route(prompt(range(300, 4)), [0, 0, 0]), 3, 'ranks 1 and 2 have one request each');
});

test('a match above cache_threshold goes to its tenant even when it is busier (select_worker_with_tokens 1012-1033)', () => {
  const { route } = harness();
  const p = prompt(range(10, 8));
  assert.equal(route(p, [0, 0]), 1);
  assert.equal(route(p, [5, 0]), 1, 'the whole prompt is cached on 1');
  // 3 of 8 blocks shared: 48 / 128 = 0.375 > 0.3
  assert.equal(route(prompt([...range(10, 3), ...range(900, 5)]), [5, 0]), 1);
  // 2 of 8: 0.25, a miss: least loaded
  assert.equal(route(prompt([...range(10, 2), ...range(950, 6)]), [5, 0]), 2);
});

test('match rate = matched tokens (whole blocks) / prompt tokens, strictly above the threshold (1013-1019)', () => {
  const { route } = harness({ cache_threshold: 0.5 });
  route(prompt(range(10, 4)), [0, 0]); // on 1
  assert.equal(route(prompt([10, 11, 70, 71]), [1, 0]), 2, '32 / 64 = 0.5 is not above 0.5');
  assert.equal(route(prompt([10, 11, 12, 80]), [1, 0]), 1, '48 / 64 = 0.75');
  // the same 3 blocks of a 100-token prompt (6 full blocks): 48 / 100
  assert.equal(route(prompt([10, 11, 12, 81, 82, 83], 100), [1, 0]), 2, '0.48');
  assert.equal(route(prompt([], 10), [1, 0]), 2, 'no full block: rate 0');
});

test('imbalanced (max - min > abs and max > min x rel): least loaded, and the prompt is inserted there (is_imbalanced 283-307)', () => {
  const { policy, route } = harness();
  const p = prompt(range(10, 8));
  assert.equal(route(p, [0, 0]), 1);
  assert.equal(route(p, [64, 0]), 1, '64 - 0 is not above 64: balanced, cache hit');
  assert.equal(route(p, [65, 0]), 2, '65 > 64 and 65 > 0: imbalanced');
  assert.equal(route(p, [200, 135]), 1, '200 - 135 > 64 but 200 < 135 x 1.5: balanced');
  assert.equal(route(p, [200, 133]), 2, '200 > 199.5: imbalanced');
  // rank 2 holds the prompt too (select_worker_min_load, 519), under rank 1 (the node's first tenant)
  policy.onRankRemoved!(1n, 0);
  assert.equal(route(prompt(range(10, 8)), [3, 0], { ids: [2, 3], book: false }), 2);
});

test('a matched tenant that is not a candidate: the first candidate, nothing inserted, not counted (1020-1063)', () => {
  const { policy, route } = harness();
  const p = prompt(range(10, 8));
  assert.equal(route(p, [0, 0, 0]), 1);
  assert.equal(route(p, [0, 0], { ids: [2, 3] }), 2, 'rank 1 is not eligible now');
  assert.equal(route(prompt(range(500, 4)), [0, 0], { ids: [2, 3], book: false }), 2, '2 was not counted as routed');
  policy.onRankRemoved!(1n, 0);
  assert.equal(route(p, [0, 0], { ids: [3, 2], book: false }), 3, 'nor the prompt inserted for it: a miss');
});

test('a query-only selection changes nothing; a booking the policy did not pick is inserted as routed', () => {
  const { policy, route } = harness();
  const p = prompt(range(10, 8));
  assert.equal(route(p, [0, 0], { book: false }), 1);
  assert.equal(route(p, [0, 1], { book: false }), 1, 'nothing cached: least loaded');
  policy.onBooked!({ workerId: 2n, dpRank: 0, prefixWords: p.words, promptTokens: p.tokens });
  assert.equal(route(prompt(range(10, 8)), [0, 1], { book: false }), 2);
});

test('every eviction_interval_secs each rank is evicted to floor(max_tree_size / block_size) blocks, least recently used first (with_config 148-175)', () => {
  const { clock, route } = harness({ max_tree_size: 40 }); // 2 blocks of 16 tokens
  const [a, b, c] = [range(10, 2), range(20, 2), range(30, 2)];
  route(prompt(a), [0], { ids: [1] });
  route(prompt(b), [0], { ids: [1] }); // rank 1 counts 4 blocks
  const where = (keys: number[]): number => route(prompt(keys), [1, 0], { book: false }); // a hit stays on 1
  clock.advanceSecs(119);
  assert.deepEqual([where(a), where(b)], [1, 1], 'before the interval both are kept');
  clock.advanceSecs(1);
  assert.deepEqual([where(a), where(b)], [2, 1], 'at 120 s the older prompt went');
  // ours: a rank counting more than twice the limit is evicted at once
  route(prompt(a), [0], { ids: [1] });
  route(prompt(c), [0], { ids: [1] });
  assert.deepEqual([where(b), where(a), where(c)], [2, 2, 1]);
});

test('a removed rank is forgotten', () => {
  const { policy, route } = harness();
  const p = prompt(range(10, 8));
  assert.equal(route(p, [0, 0]), 1);
  assert.equal(route(p, [1, 0], { book: false }), 1);
  policy.onRankRemoved!(1n, 0);
  assert.equal(route(p, [0, 0], { book: false }), 1, 'a miss again: the least loaded, first');
  assert.equal(route(p, [1, 0], { book: false }), 2);
});

test('parameters: the router\'s defaults, key=value overrides, its bounds (main.rs 193-225, validation.rs 484-513)', () => {
  assert.deepEqual(parseRoutingPolicy('sglang_cache_aware'), {
    kind: 'sglang_cache_aware',
    params: { cache_threshold: 0.3, balance_abs_threshold: 64, balance_rel_threshold: 1.5, eviction_interval_secs: 120, max_tree_size: 67108864 },
  });
  assert.deepEqual(parseRoutingPolicy('sglang_cache_aware:cache_threshold=0.5:balance_abs_threshold=32').params.cache_threshold, 0.5);
  const bad: [string, RegExp][] = [
    ['cache_threshold=1.5', /sglang_cache_aware: parameter "cache_threshold" must be a finite number in \[0, 1\] \(got 1.5\)/],
    ['balance_rel_threshold=0.9', /parameter "balance_rel_threshold" must be a finite number >= 1 \(got 0.9\)/],
    ['eviction_interval_secs=0', /parameter "eviction_interval_secs" must be an integer >= 0, not 0 \(got 0\)/],
    ['max_tree_size=2.5', /parameter "max_tree_size" must be an integer >= 0, not 0 \(got 2.5\)/],
    ['balance_abs_threshold=-1', /parameter "balance_abs_threshold" must be an integer >= 0 \(got -1\)/],
    ['tree=1', /sglang_cache_aware: unknown parameter "tree" \(known: cache_threshold, balance_abs_threshold, balance_rel_threshold, eviction_interval_secs, max_tree_size\)/],
  ];
  for (const [kv, re] of bad) assert.throws(() => parseRoutingPolicy(`sglang_cache_aware:${kv}`), re, kv);
  assert.equal(parseRouterConfig({ SELECT_SERVICE_ROUTING_POLICY: 'sglang_cache_aware:cache_threshold=0.6' }).routingPolicy, 'sglang_cache_aware:cache_threshold=0.6');
  assert.throws(() => parseRouterConfig({}, { routingPolicy: 'sglang_cache_aware:cache_threshold=2' }), /--routing-policy: sglang_cache_aware: parameter "cache_threshold"/);
});

test('the simulator runs the policy on a small trace', async () => {
  const res = await simulate(conversationTrace(300), { fleet: { workers: 4, capacityBlocks: 512 }, policies: 'sglang_cache_aware,sglang_cache_aware:cache_threshold=1', seed: 1 });
  const [p, never] = res.policies;
  assert.equal(p.requests, 300);
  assert.equal(p.index_mismatches, 0);
  assert.ok(p.hit_rate > never.hit_rate, `the tree finds cached prefixes (${p.hit_rate} > ${never.hit_rate} with every match refused)`);
});

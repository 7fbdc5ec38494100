/**
 * `ray_prefix_affinity` against hand-worked cases from Ray Serve LLM's `PrefixCacheAffinityRouter`
 * (ray-project/ray, python/ray/llm/_internal/serve/routing_policies/prefix_aware/
 * prefix_aware_router.py, Ray 2.58.0; line numbers are that file's unless named): defaults
 * (59-68), the imbalance check (227-255), the match-rate branch (258-283), the lowest queue of
 * the chosen set (request_router.py 1028-1084), power of two (pow_2_router.py 82-106), insert on
 * routing (394-418), eviction (prefix_tree.py 591-601); Ray's own router tests
 * (python/ray/llm/tests/serve/cpu/deployments/test_prefix_aware_request_router.py) where they
 * carry over. One character is one block (block size 1) unless a test says otherwise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRayPrefixAffinityPolicy, powerOfTwo, type RayPrefixAffinityPolicy } from '../../../../src/core/select/peers/ray-prefix-affinity.js';
import { parseRoutingPolicy, RAY_PREFIX_AFFINITY_DEFAULTS } from '../../../../src/core/select/routing-policy.js';
import { runPolicy, selectionContext, type CandidateView, type PickerRow } from '../../../../src/core/select/policy.js';
import { parseRouterConfig } from '../../../../src/core/config/config.js';
import { seededRng, type Rng } from '../../../../src/core/random.js';
import { ManualClock, candidateView } from '../core-helpers.js';
import { charBlocks } from './prefix-words.js';

/** A candidate rank `id` (dp rank 0) with `queue` active requests. */
function cand(id: number, queue = 0): CandidateView {
  return candidateView({ workerId: BigInt(id), activeRequests: queue });
}

interface Setup { policy: RayPrefixAffinityPolicy; clock: ManualClock; bs: number }

function setup(params: Record<string, number> = {}, bs = 1): Setup {
  const clock = new ManualClock();
  return { policy: createRayPrefixAffinityPolicy({ modelName: 'm', routingGroup: 'g', blockSize: bs }, params, { clock }), clock, bs };
}

/** The routed request: `text` booked on worker `id`. */
function routed(s: Setup, text: string, id: number): void {
  s.policy.onBooked?.({ workerId: BigInt(id), dpRank: 0, prefixWords: charBlocks(text), promptTokens: text.length * s.bs });
}

/** The worker chosen for `text` (`tokens`: the prompt's length, default its blocks). */
function choose(s: Setup, text: string, cands: CandidateView[], seed = 1, tokens = text.length * s.bs): number {
  const ctx = selectionContext({ promptTokens: tokens, blockSize: s.bs, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g', prefixWords: charBlocks(text) });
  return Number(cands[runPolicy(s.policy, ctx, cands, seededRng(seed))].worker().workerId);
}

const seeds = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

test('defaults are Ray 2.58.0\'s initialize_state (59-68), characters as tokens at 4 a token; imbalance and eviction off', () => {
  assert.deepEqual(parseRoutingPolicy('ray_prefix_affinity'), { kind: 'ray_prefix_affinity', params: { ...RAY_PREFIX_AFFINITY_DEFAULTS } });
  assert.deepEqual({ ...RAY_PREFIX_AFFINITY_DEFAULTS }, {
    imbalanced_threshold: Infinity, match_rate_threshold: 0.1, do_eviction: 0,
    eviction_threshold_tokens: 400_000 / 4, eviction_target_tokens: 360_000 / 4, eviction_interval_secs: 10,
  });
});

test('high match rate: the replica holding the prefix (Ray test_high_match_rate_selects_matching_replica)', () => {
  const s = setup();
  routed(s, 'Hello', 2);
  // "Hello world": 5 of 11 matched, 0.45 >= 0.1 (268-283): worker 2 though it holds more
  for (const seed of seeds) assert.equal(choose(s, 'Hello world', [cand(1), cand(2)], seed), 2);
});

test('low match rate: the smallest tree (Ray test_low_match_rate_uses_smallest_tree)', () => {
  const s = setup();
  routed(s, 'hi', 1);
  routed(s, 'longtext', 2);
  for (const seed of seeds) assert.equal(choose(s, 'z', [cand(1), cand(2)], seed), 1, '0 matched: the 2-block tree over the 8-block one');
});

test('the match rate threshold is inclusive (match_rate < threshold goes to the smallest tree, 269)', () => {
  const s = setup();
  routed(s, 'xyzzzzz', 2); // 7 blocks
  routed(s, 'q', 1); // 1 block
  assert.equal(choose(s, 'x123456789', [cand(1), cand(2)]), 2, '1 of 10 = 0.1: matched');
  assert.equal(choose(s, 'x1234567890', [cand(1), cand(2)]), 1, '1 of 11 < 0.1: smallest');
  // the rate is matched blocks x block size over the prompt's tokens, its partial block included
  const b4 = setupWith(4, 'xyzzzzz', 'q');
  assert.equal(choose(b4, 'x', [cand(1), cand(2)], 1, 40), 2, '4 of 40 tokens = 0.1: matched');
  assert.equal(choose(b4, 'x', [cand(1), cand(2)], 1, 41), 1, '4 of 41 tokens < 0.1: smallest');
});

/** A block-size-`bs` setup with `a` routed to worker 2 and `b` to worker 1. */
function setupWith(bs: number, a: string, b: string): Setup {
  const s = setup({}, bs);
  routed(s, a, 2);
  routed(s, b, 1);
  return s;
}

test('of the chosen replicas, the lowest queue; equal queues: the first in candidate order (request_router.py 1043-1058)', () => {
  const s = setup();
  for (const id of [1, 2, 3]) routed(s, 'abc', id);
  routed(s, 'zzzz', 4);
  const four = (q: number[]): CandidateView[] => q.map((n, i) => cand(i + 1, n));
  assert.equal(choose(s, 'abcd', four([2, 1, 1, 0])), 2, 'owners 1-3; 4 has the shortest queue but no match');
  for (const seed of seeds) assert.equal(choose(s, 'abcd', four([1, 1, 1, 0]), seed), 1);
  assert.equal(choose(s, 'abcd', [cand(3, 0), cand(2, 0), cand(1, 0)]), 3);
  // smallest trees likewise: 5 and 6 are empty
  assert.equal(choose(s, 'q', [cand(4), cand(6, 1), cand(5, 1), cand(1)]), 6);
});

test('an imbalanced fleet falls back to power of two on queue length (Ray test_fallback_when_imbalanced)', () => {
  const s = setup({ imbalanced_threshold: 2 });
  routed(s, 'hello world', 2);
  for (const seed of seeds) assert.equal(choose(s, 'hello world', [cand(1, 0), cand(2, 10)], seed), 1, 'r2 matches but 10 - 0 > 2');
  assert.equal(choose(s, 'hello world', [cand(1, 0), cand(2, 2)]), 2, '2 - 0 is not > 2: prefix routing');
  // the default threshold is inf (PR #59390): never imbalanced
  const d = setup();
  routed(d, 'hello world', 2);
  for (const seed of seeds) assert.equal(choose(d, 'hello world', [cand(1, 0), cand(2, 10_000)], seed), 2);
});

/** An Rng that returns `values` in turn. */
function scripted(...values: number[]): Rng {
  let i = 0;
  return { next: () => values[i++], u64: () => 0n };
}

test('power of two: two distinct random candidates, the shorter queue, the first drawn on a tie (pow_2_router.py 100-104)', () => {
  const rows = (q: number[]): PickerRow[] => q.map((n, i) => ({ candidate: cand(i + 1, n), cost: () => 0 }));
  // i = floor(0.5 x 3) = 1; j = floor(0.6 x 2) = 1 >= i, so 2
  assert.equal(powerOfTwo(rows([0, 5, 5]), scripted(0.5, 0.6)), 1, 'tie: the first drawn');
  assert.equal(powerOfTwo(rows([0, 5, 3]), scripted(0.5, 0.6)), 2);
  assert.equal(powerOfTwo(rows([0, 5, 3]), scripted(0.9, 0.1)), 0, 'i = 2, j = 0');
  assert.equal(powerOfTwo(rows([7]), scripted()), 0);
  // the longest queue of three is never chosen, every other one is
  const seen = new Set<number>();
  for (let seed = 0; seed < 200; seed++) seen.add(powerOfTwo(rows([3, 9, 3]), seededRng(seed)));
  assert.deepEqual([...seen].sort(), [0, 2]);
});

test('match_rate_threshold=0: nothing matched still "matches" the root, every candidate, lowest queue', () => {
  const s = setup({ match_rate_threshold: 0 });
  routed(s, 'aaaa', 2);
  assert.equal(choose(s, 'zzz', [cand(1, 3), cand(2, 1), cand(3, 2)]), 2, 'not the empty tree of 1 or 3');
});

test('a routed prompt is inserted for the chosen rank; a removed rank loses its tree', () => {
  const s = setup();
  const c = [cand(1), cand(2), cand(3)];
  const first = choose(s, 'system prompt A', c);
  assert.equal(first, 1, 'all trees empty: the first candidate');
  routed(s, 'system prompt A', first);
  assert.equal(choose(s, 'system prompt A, question 2', c), 1);
  assert.equal(choose(s, 'unrelated', c), 2, 'a new prompt goes to an empty tree');
  assert.equal(s.policy.tree.tenant('1:0')!.size, 15);
  s.policy.onRankRemoved?.(1n, 0);
  assert.equal(s.policy.tree.tenant('1:0'), undefined);
  assert.equal(s.policy.tree.entries, 0);
  assert.equal(choose(s, 'system prompt A, question 3', c), 1, 'back as an empty tenant');
});

test('eviction (do_eviction=1) runs at the first selection or booking once the interval has passed', () => {
  // Ray test_eviction_threshold_behavior: threshold 10, target 5, interval 1 s (block size 1: tokens are blocks)
  const s = setup({ do_eviction: 1, eviction_threshold_tokens: 10, eviction_target_tokens: 5, eviction_interval_secs: 1 });
  routed(s, 'verylongtext', 1);
  s.clock.advance(1);
  routed(s, 'anotherlongtext', 1);
  const size = (): number => s.policy.tree.tenant('1:0')!.size;
  assert.equal(size(), 27);
  s.clock.advance(998);
  choose(s, 'x', [cand(1)]);
  assert.equal(size(), 27, 'the interval has not passed');
  s.clock.advance(1);
  choose(s, 'x', [cand(1)]);
  assert.ok(size() <= 5, `${size()}`);
  // off by default: nothing is evicted however long
  const off = setup({ eviction_threshold_tokens: 10, eviction_target_tokens: 5, eviction_interval_secs: 1 });
  routed(off, 'verylongtext', 1);
  off.clock.advance(60_000);
  routed(off, 'anotherlongtext', 1);
  assert.equal(off.policy.tree.tenant('1:0')!.size, 27);
});

test('eviction thresholds in tokens count blocks x block size', () => {
  // block size 4: 10 blocks = 40 tokens > 36; down to floor(20 / 4) = 5 blocks at most
  const s = setup({ do_eviction: 1, eviction_threshold_tokens: 36, eviction_target_tokens: 20, eviction_interval_secs: 0 }, 4);
  routed(s, 'abcdefghij', 1);
  s.clock.advance(1);
  routed(s, 'abcdefghij', 2);
  routed(s, 'abcdefghi', 3); // 9 blocks = 36 tokens: not above
  s.clock.advance(1);
  routed(s, 'k', 1); // the eviction runs first, then "k" goes in
  const sizes = [1, 2, 3].map((id) => s.policy.tree.tenant(`${id}:0`)!.size);
  assert.deepEqual(sizes, [1, 0, 9]);
});

test('parameters: --routing-policy ray_prefix_affinity:key=value, inf where Ray takes float("inf"), bad values named', () => {
  assert.deepEqual(parseRoutingPolicy('ray_prefix_affinity:imbalanced_threshold=4:do_eviction=1').params,
    { ...RAY_PREFIX_AFFINITY_DEFAULTS, imbalanced_threshold: 4, do_eviction: 1 });
  assert.equal(parseRoutingPolicy('ray_prefix_affinity:imbalanced_threshold=inf').params.imbalanced_threshold, Infinity);
  assert.equal(parseRoutingPolicy('ray_prefix_affinity:imbalanced_threshold=Infinity').params.imbalanced_threshold, Infinity);
  const bad: [string, RegExp][] = [
    ['match_rate_threshold=1.5', /parameter "match_rate_threshold" must be a finite number in \[0, 1\] \(got 1.5\)/],
    ['do_eviction=2', /parameter "do_eviction" must be an integer in \[0, 1\] \(got 2\)/],
    ['do_eviction=0.5', /"do_eviction" must be an integer/],
    ['imbalanced_threshold=-1', /parameter "imbalanced_threshold" must be a finite number >= 0, or inf \(got -1\)/],
    ['eviction_threshold_tokens=inf', /"eviction_threshold_tokens" must be an integer >= 0 \(got Infinity\)/],
    ['eviction_threshold_chars=400000', /ray_prefix_affinity: unknown parameter "eviction_threshold_chars" \(known: imbalanced_threshold, match_rate_threshold, do_eviction, eviction_threshold_tokens, eviction_target_tokens, eviction_interval_secs\)/],
    ['imbalanced_threshold=', /"imbalanced_threshold" must be .* \(got NaN\)/],
  ];
  for (const [kv, msg] of bad) assert.throws(() => parseRoutingPolicy(`ray_prefix_affinity:${kv}`), msg, kv);
  assert.throws(() => parseRoutingPolicy('ttft:evict_weight=inf'), /"evict_weight" must be a finite number >= 0 \(got Infinity\)/, 'inf only where the table allows it');
  assert.throws(() => parseRouterConfig({ SELECT_SERVICE_ROUTING_POLICY: 'ray_prefix_affinity:do_eviction=yes' }), /do_eviction/);
  assert.equal(parseRouterConfig({}, { routingPolicy: 'ray_prefix_affinity:imbalanced_threshold=inf' }).routingPolicy, 'ray_prefix_affinity:imbalanced_threshold=inf');
});

/**
 * The `llmd` policy against hand-worked cases from llm-d's source (lines cited as read
 * 2026-12-05): llm-d/llm-d-inference-scheduler 520af478, under
 * pkg/epp/framework/plugins/scheduling/ (abbreviated `sched/`); llm-d/llm-d-kv-cache v0.8.0
 * (1fac0a1c); the llm-d guide's weights (llm-d/llm-d 955190d9). Also the pending-prefill count
 * it reads, its parameters, and a simulator run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLlmdPolicy, kvUtilizationScores, prefixScores, queueScores, type LlmdParams } from '../../../../src/core/select/peers/llmd.js';
import { parseRoutingPolicy, ROUTING_POLICY_PARAMS } from '../../../../src/core/select/routing-policy.js';
import { runPolicy, selectionContext, type CandidateView } from '../../../../src/core/select/policy.js';
import { ActiveLoads } from '../../../../src/core/load/loads.js';
import { seededRng } from '../../../../src/core/random.js';
import { simulate } from '../../../../src/sim/simulate.js';
import { conversationTrace } from '../../sim/sim-helpers.js';
import { ManualClock } from '../core-helpers.js';

interface Rank { dev?: number; host?: number; disk?: number; pending?: number; held?: number; capacity?: number | null }

/** A candidate view with the accessors the llmd scorers read. */
function rank(workerId: number, o: Rank = {}): CandidateView {
  return {
    worker: () => ({ workerId: BigInt(workerId), dpRank: 0, taints: [] }),
    deviceOverlapBlocks: () => o.dev ?? 0, hostOverlapBlocks: () => o.host ?? 0, diskOverlapBlocks: () => o.disk ?? 0,
    accountingCacheEstimate: () => 0, hasTierMatches: () => (o.host ?? 0) + (o.disk ?? 0) > 0, sharedHits: () => 0,
    isAvailable: () => true, activePrefillTokens: () => 0, decodeCostBlocks: () => o.held ?? 0, activeRequests: () => 0,
    prefillPendingRequests: () => o.pending ?? 0, totalKvBlocks: () => (o.capacity === undefined ? null : o.capacity),
    maxNumBatchedTokens: () => null, maxNumSeqs: () => null, busyFraction: () => 0, pendingSeconds: () => 0, contextTokens: () => 0, activeOverlapBlocks: () => 0,
  };
}

const DEFAULTS = ROUTING_POLICY_PARAMS.llmd.defaults as LlmdParams;
/** A 1,000-token prompt in blocks of 16: floor(1000 / 16) = 62 full blocks. */
const ctx = (promptTokens = 1000) => selectionContext({ promptTokens, blockSize: 16, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g' });

function prefix(ranks: CandidateView[], p: Partial<LlmdParams> = {}, tokens = 1000): number[] {
  const out = new Float64Array(ranks.length);
  prefixScores(ctx(tokens), ranks, { ...DEFAULTS, ...p }, out);
  return [...out];
}
function fill(f: (c: readonly CandidateView[], out: Float64Array) => void, ranks: CandidateView[]): number[] {
  const out = new Float64Array(ranks.length);
  f(ranks, out);
  return [...out];
}
/** llm-d's weighted score per rank (minus the summed cost the policy's scorers write). */
function scores(ranks: CandidateView[], params: Record<string, number> = {}, tokens = 1000): number[] {
  const policy = createLlmdPolicy(params);
  const total = new Float64Array(ranks.length), out = new Float64Array(ranks.length);
  for (const s of policy.scorers) { out.fill(0); s.score(ctx(tokens), ranks, out); for (let i = 0; i < ranks.length; i++) total[i] -= out[i]; }
  return [...total];
}
const pick = (ranks: CandidateView[], params: Record<string, number> = {}, seed = 1): number =>
  runPolicy(createLlmdPolicy(params), ctx(), ranks, seededRng(seed));

test('prefix: matched blocks over the prompt\'s full blocks, clipped to 1 (sched/scorer/preciseprefixcache/utils.go:16-41, precise_prefix_cache.go:796)', () => {
  // 1,000 tokens of 16: total = floor(62.5) = 62 (the partial tail block is dropped)
  assert.deepEqual(prefix([rank(1, { dev: 31 }), rank(2, { dev: 62 }), rank(3), rank(4, { dev: 63 })]), [0.5, 1, 0, 1]);
  // utils.go:19: no full block (totalBlocks <= 0) -> every pod 0, even one that matched
  assert.deepEqual(prefix([rank(1, { dev: 1 })], {}, 15), [0]);
});

test('prefix: lower tiers at the llm-d-kv-cache backend weights, gpu 1.0, cpu 0.8, an unnamed tier 1.0 (kvblock_scorer.go:91-103, backend.go:28-29)', () => {
  // 20 device blocks, then 10 on the host, then 5 on disk: (20 + 0.8 x 10 + 1 x 5) / 62
  const [s] = prefix([rank(1, { dev: 20, host: 10, disk: 5 })]);
  assert.equal(s, (20 + 8 + 5) / 62);
  const [t] = prefix([rank(1, { dev: 20, host: 10, disk: 5 })], { cpu_weight: 0.5, disk_weight: 0 });
  assert.equal(t, (20 + 5) / 62);
});

test('prefix with prefix_min_max=1: v0.8.0\'s min-max over the pods the index matched (v0.8.0 utils.go:20-44)', () => {
  assert.deepEqual(prefix([rank(1, { dev: 10 }), rank(2, { dev: 30 }), rank(3, { dev: 20 }), rank(4)], { prefix_min_max: 1 }), [0, 1, 0.5, 0]);
  // one matched pod (min == max) scores 1 however little it matched; unmatched ones 0
  assert.deepEqual(prefix([rank(1, { dev: 1 }), rank(2)], { prefix_min_max: 1 }), [1, 0]);
  assert.deepEqual(prefix([rank(1), rank(2)], { prefix_min_max: 1 }), [0, 0]);
  // a pod matched on the host tier only is matched
  assert.deepEqual(prefix([rank(1, { host: 10 }), rank(2, { dev: 10 })], { prefix_min_max: 1 }), [0, 1]);
});

test('queue: (max - q) / (max - min) of the waiting requests, 1 when all are equal (sched/scorer/queuedepth/queue.go:78-106)', () => {
  assert.deepEqual(fill(queueScores, [rank(1), rank(2, { pending: 2 }), rank(3, { pending: 4 })]), [1, 0.5, 0]);
  assert.deepEqual(fill(queueScores, [rank(1, { pending: 3 }), rank(2, { pending: 3 })]), [1, 1]);
});

test('kv-cache utilisation: 1 - usage, usage 0 without total_kv_blocks, clipped at 0 (kvcache_utilization.go:76-82, scheduler_profile.go:167,194-202)', () => {
  const ranks = [rank(1, { held: 25, capacity: 100 }), rank(2, { held: 25, capacity: null }), rank(3, { held: 150, capacity: 100 })];
  assert.deepEqual(fill(kvUtilizationScores, ranks), [0.75, 1, -0.5]);
  assert.deepEqual(scores(ranks, { prefix_weight: 0, queue_weight: 0 }), [0.75, 1, 0], 'a score below 0 weighs as 0');
});

test('the weighted sum of the guide\'s profile: prefix 2, kv-cache utilisation 1, queue 1 (guide values.yaml; scheduler_profile.go:165-168)', () => {
  // A holds 31 of 62 blocks but has 4 waiting and half its KV used; B holds nothing, idle
  const a = rank(1, { dev: 31, pending: 4, held: 50, capacity: 100 }), b = rank(2, { capacity: 100 });
  assert.deepEqual(scores([a, b]), [2 * 0.5 + 0.5 + 0, 0 + 1 + 1]);
  assert.equal(pick([a, b]), 1, 'the idle rank wins 2 to 1.5');
  // with the whole prompt cached, A wins 2.5 to 2
  assert.equal(pick([rank(1, { dev: 62, pending: 4, held: 50, capacity: 100 }), b]), 0);
});

test('weights change the answer: the guide\'s 2/1/1 against the earlier gaie-kv-events guide\'s 3/2/2', () => {
  // A: 40 of 62 blocks (P = 0.645), busiest; B: no prefix, idle.
  // 2/1/1: A = 1.29 + 1 + 0 = 2.29 > B = 0 + 1 + 1 = 2; 3/2/2: A = 1.935 + 2 + 0 = 3.935 < B = 0 + 2 + 2 = 4
  const ranks = (): CandidateView[] => [rank(1, { dev: 40, pending: 2 }), rank(2)];
  assert.equal(pick(ranks()), 0);
  assert.equal(pick(ranks(), parseRoutingPolicy('llmd:prefix_weight=3:queue_weight=2:kv_weight=2').params), 1);
});

test('max-score picker: the highest score, exact ties uniformly at random (sched/picker/maxscore/picker.go:92-104, picker/common.go)', () => {
  // A and B tie exactly (same cache, same load); C is worse
  const three = (): CandidateView[] => [rank(1, { dev: 10 }), rank(2, { dev: 10 }), rank(3, { dev: 10, pending: 1 })];
  const seen = new Set<number>();
  for (let seed = 0; seed < 40; seed++) seen.add(pick(three(), {}, seed));
  assert.deepEqual([...seen].sort(), [0, 1], 'both tied ranks are chosen, the worse one never');
});

test('parameters: defaults from the guide, the syntax, and bad values named', () => {
  assert.deepEqual(parseRoutingPolicy('llmd'), {
    kind: 'llmd', params: { prefix_weight: 2, kv_weight: 1, queue_weight: 1, cpu_weight: 0.8, disk_weight: 1, prefix_min_max: 0 },
  });
  assert.deepEqual(parseRoutingPolicy('llmd:prefix_weight=3:queue_weight=2:kv_weight=2:prefix_min_max=1').params,
    { prefix_weight: 3, kv_weight: 2, queue_weight: 2, cpu_weight: 0.8, disk_weight: 1, prefix_min_max: 1 });
  assert.throws(() => parseRoutingPolicy('llmd:prefix=1'), /llmd: unknown parameter "prefix" \(known: prefix_weight, kv_weight, queue_weight, cpu_weight, disk_weight, prefix_min_max\)/);
  assert.throws(() => parseRoutingPolicy('llmd:queue_weight=-1'), /llmd: parameter "queue_weight" must be a finite number >= 0 \(got -1\)/);
  assert.throws(() => parseRoutingPolicy('llmd:cpu_weight=1.5'), /"cpu_weight" must be a finite number in \[0, 1\]/);
  assert.throws(() => parseRoutingPolicy('llmd:prefix_min_max=0.5'), /"prefix_min_max" must be an integer in \[0, 1\]/);
  assert.throws(() => parseRoutingPolicy('llmd:kv_weight'), /"kv_weight" must be a finite number/);
  assert.throws(() => createLlmdPolicy({ prefix_weight: 'x' }), /"prefix_weight" must be a finite number/);
});

test('pending prefills per rank: booked until prefill_complete (once), freed, or the rank removed', () => {
  const l = new ActiveLoads({ blockSize: 4, clock: new ManualClock(), rng: seededRng(1), expirySecs: 300 });
  l.addRank(1n, 0);
  const row = l.rowOf(1n, 0);
  const input = { seq: new Uint32Array(8), nBlocks: 0, trackPrefillTokens: true, prefillTokens: 100, islTokens: 100 };
  l.book('a', 1n, 0, input);
  l.book('b', 1n, 0, { ...input, trackPrefillTokens: false, prefillTokens: 0 }); // no prefill tokens booked: still waiting
  assert.equal(l.waiting.count[row], 2);
  l.prefillComplete('a');
  l.prefillComplete('a');
  assert.equal(l.waiting.count[row], 1, 'a repeated prefill_complete counts once');
  l.free('a');
  assert.equal(l.waiting.count[row], 1, 'freeing a request past its prefill leaves the count');
  l.free('b');
  assert.equal(l.waiting.count[row], 0, 'freeing one before its prefill completed removes it');
  l.book('c', 1n, 0, input);
  l.removeRank(1n, 0);
  l.addRank(1n, 0);
  assert.equal(l.waiting.count[l.rowOf(1n, 0)], 0);
});

test('simulator: llmd (and v0.8.0\'s normalisation) runs a trace to the end and uses the cache', async () => {
  const res = await simulate(conversationTrace(600), {
    fleet: { workers: 4, capacityBlocks: 512 }, policies: 'llmd,llmd:prefix_min_max=1,round_robin', seed: 1,
  });
  const [llmd, minMax, rr] = res.policies;
  for (const p of res.policies) {
    assert.equal(p.requests, 600, p.policy);
    assert.equal(p.index_mismatches, 0, p.policy);
  }
  assert.ok(llmd.hit_rate > rr.hit_rate, `llmd ${llmd.hit_rate} > round_robin ${rr.hit_rate}`);
  assert.ok(minMax.hit_rate > rr.hit_rate, `min-max ${minMax.hit_rate} > round_robin ${rr.hit_rate}`);
});

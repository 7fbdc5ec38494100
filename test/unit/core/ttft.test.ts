/**
 * The ttft routing policy and the prefill-rate learner it reads: busy-time accounting of
 * completions, decay, the prior, each cost term, the parameter syntax and the configuration.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrefillRates, prefillRate, credibleRate, rateStandardError, CREDIBLE_Z, PREFILL_RATE_DECAY } from '../../../src/core/load/prefill-rate.js';
import { ActiveLoads } from '../../../src/core/load/loads.js';
import { createTtftPolicy } from '../../../src/core/select/ttft.js';
import { parseRoutingPolicy, TTFT_DEFAULTS } from '../../../src/core/select/routing-policy.js';
import { runPolicy, selectionContext, type CandidateView } from '../../../src/core/select/policy.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { seededRng } from '../../../src/core/random.js';
import { ManualClock, makeCore, worker } from './core-helpers.js';

test('learner: a completion accounts for the time since the later of its booking and the previous completion', () => {
  const r = new PrefillRates();
  r.observe('1:0', 10_000, 0, 1000); // idle rank: 10k tokens in 1 s
  r.observe('1:0', 10_000, 0, 2000); // booked at 0 too, but queued behind: its own second is 1-2 s
  const o = r.observed('1:0')!;
  assert.equal(o.samples, 2);
  assert.ok(Math.abs(o.tokens / o.seconds - 10_000) < 1e-6, `${o.tokens / o.seconds}`);
  // idle time between prefills is not charged: booked at 5 s, done at 5.5 s
  r.observe('1:0', 5_000, 5000, 5500);
  const p = r.observed('1:0')!;
  assert.ok(Math.abs(p.tokens / p.seconds - 10_000) < 1e-6);
  assert.equal(r.observed('2:0'), undefined);
  r.removeRank('1:0');
  assert.equal(r.observed('1:0'), undefined);
});

test('learner: older observations decay, so the rate follows a rank that slows down', () => {
  const r = new PrefillRates();
  let t = 0;
  for (let i = 0; i < 100; i++) { r.observe('k', 10_000, t, t + 1000); t += 1000; }
  for (let i = 0; i < 100; i++) { r.observe('k', 10_000, t, t + 4000); t += 4000; }
  const o = r.observed('k')!;
  assert.ok(o.tokens / o.seconds < 2600, `now ~2,500 tokens/s (${o.tokens / o.seconds})`);
  assert.ok(PREFILL_RATE_DECAY > 0.9 && PREFILL_RATE_DECAY < 1);
});

test('learner: the prior counts as weightTokens observed tokens', () => {
  const prior = { tokensPerSec: 10_000, weightTokens: 20_000 };
  assert.equal(prefillRate(undefined, prior), 10_000);
  // 20k tokens observed in 1 s (20k/s) against a prior of 20k tokens in 2 s
  assert.equal(prefillRate({ tokens: 20_000, seconds: 1, samples: 1 }, prior), 40_000 / 3);
  assert.equal(prefillRate({ tokens: 20_000, seconds: 1, samples: 1 }, { tokensPerSec: 5, weightTokens: 0 }), 20_000);
});

test('loads feed the learner on prefill completion (local and mirrored bookings alike)', () => {
  const clock = new ManualClock();
  const l = new ActiveLoads({ blockSize: 4, clock, rng: seededRng(1), expirySecs: 300 });
  l.addRank(1n, 0);
  const input = { seq: new Uint32Array(8), nBlocks: 0, trackPrefillTokens: true, prefillTokens: 3000, islTokens: 3000 };
  l.book('a', 1n, 0, input);
  clock.advance(500);
  l.prefillComplete('a');
  l.prefillComplete('a'); // repeated: counted once
  const o = l.prefillRates.observed('1:0')!;
  assert.deepEqual([o.samples, o.tokens, o.seconds], [1, 3000, 0.5]);
  l.book('b', 1n, 0, input);
  l.free('b'); // freed before its prefill completed: no observation
  assert.equal(l.prefillRates.observed('1:0')!.samples, 1);
  l.removeRank(1n, 0);
  assert.equal(l.prefillRates.observed('1:0'), undefined);
});

/** A candidate view with the accessors the ttft scorer reads. */
function cand(workerId: number, o: { cached?: number; queued?: number; held?: number; capacity?: number | null }): CandidateView {
  return {
    worker: () => ({ workerId: BigInt(workerId), dpRank: 0, taints: [] }),
    deviceOverlapBlocks: () => (o.cached ?? 0) / 16, hostOverlapBlocks: () => 0, diskOverlapBlocks: () => 0,
    accountingCacheEstimate: () => o.cached ?? 0, hasTierMatches: () => false, sharedHits: () => 0, isAvailable: () => true,
    activePrefillTokens: () => o.queued ?? 0, decodeCostBlocks: () => o.held ?? 0, activeRequests: () => 0,
    totalKvBlocks: () => (o.capacity === undefined ? 100 : o.capacity),
  };
}

function costs(cands: CandidateView[], params: Record<string, number> = {}, rates = new PrefillRates(), held?: (w: bigint) => number): number[] {
  const policy = createTtftPolicy({ modelName: 'm', routingGroup: 'g', blockSize: 16 }, params, { rates: () => rates, heldBlocks: held });
  const out = new Float64Array(cands.length);
  policy.scorers[0].score(selectionContext({ promptTokens: 1600, blockSize: 16, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g' }), cands, out);
  return [...out];
}

test('ttft cost: (booked prefill + uncached tokens) / rate, in seconds', () => {
  const p = { decode_weight: 0, memory_weight: 0, prior_tokens_per_sec: 1000 };
  const [a, b, c] = costs([cand(1, { cached: 1200 }), cand(2, {}), cand(3, { cached: 1200, queued: 1500 })], p);
  assert.equal(a, 0.4);
  assert.equal(b, 1.6);
  assert.equal(c, 1.9, 'a cached prefix behind a queue can lose to an idle rank');
});

test('ttft cost: decode interference and the KV memory penalty need total_kv_blocks', () => {
  const p = { prior_tokens_per_sec: 1000, decode_weight: 1, memory_weight: 1, memory_threshold: 0.5 };
  const [busy, idle, unknown] = costs([cand(1, { held: 50 }), cand(2, { held: 0 }), cand(3, { held: 50, capacity: null })], p);
  assert.equal(idle, 1.6);
  assert.equal(unknown, 1.6, 'without a capacity neither term applies');
  assert.equal(busy, 1.6 * 1.5, 'half the KV memory held by running requests: prefill 50% slower, at the threshold');
  const [over] = costs([cand(1, { held: 60 })], p);
  assert.ok(Math.abs(over - (1.6 * 1.6 + (10 * 16) / 1000)) < 1e-12, `10 blocks past the threshold cost their recompute (${over})`);
});

test('ttft cost: a rank learned slower costs more; unobserved ranks take the pooled rate', () => {
  const rates = new PrefillRates();
  for (let i = 0; i < 50; i++) {
    rates.observe('1:0', 10_000, i * 1000, i * 1000 + 1000); // 10k tokens/s
    rates.observe('2:0', 10_000, i * 2000, i * 2000 + 2000); // 5k tokens/s
  }
  const p = { decode_weight: 0, memory_weight: 0, prior_weight_tokens: 1000 };
  const [fast, slow, fresh] = costs([cand(1, {}), cand(2, {}), cand(3, {})], p, rates);
  assert.ok(fast < fresh && fresh < slow, `${fast} < ${fresh} < ${slow}`);
  assert.ok(Math.abs(slow / fast - 2) < 0.05);
});

test('ttft picks the lowest cost through the policy runner', () => {
  const policy = createTtftPolicy({ modelName: 'm', routingGroup: 'g', blockSize: 16 }, {}, { rates: () => new PrefillRates() });
  const ctx = selectionContext({ promptTokens: 1600, blockSize: 16, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g' });
  assert.equal(runPolicy(policy, ctx, [cand(1, { queued: 5000 }), cand(2, { cached: 800 }), cand(3, {})], seededRng(1)), 1);
});

test('routing-policy syntax, and the configuration names the variable or flag on error', () => {
  assert.deepEqual(parseRoutingPolicy('kv').kind, 'kv');
  const t = parseRoutingPolicy(' ttft:decode_weight=0.5:prior_tokens_per_sec=20000 ');
  assert.deepEqual(t, { kind: 'ttft', params: { ...TTFT_DEFAULTS, decode_weight: 0.5, prior_tokens_per_sec: 20000 } });
  assert.throws(() => parseRoutingPolicy('fast'), /unknown routing policy "fast" \(known: kv, ttft, ray_prefix_affinity\)/);
  assert.throws(() => parseRoutingPolicy('ttft:prior_tokens_per_sec=0'), /must be a finite number >= 0, not 0/);
  assert.throws(() => parseRoutingPolicy('ttft:decode_weight'), /"decode_weight" must be a finite number/);
  assert.throws(() => parseRoutingPolicy('kv:x=1'), /kv takes no parameters/);
  assert.equal(parseRouterConfig({}).routingPolicy, null);
  assert.equal(parseRouterConfig({ SELECT_SERVICE_ROUTING_POLICY: 'ttft' }).routingPolicy, 'ttft');
  assert.throws(() => parseRouterConfig({ SELECT_SERVICE_ROUTING_POLICY: 'fifo' }), /SELECT_SERVICE_ROUTING_POLICY: unknown routing policy "fifo"/);
  assert.throws(() => parseRouterConfig({}, { routingPolicy: 'ttft:x=1' }), /--routing-policy: ttft: unknown parameter "x"/);
});

test('ttft cost: a saturated fleet weighs uncached tokens more, and a session stays home unless moving pays', () => {
  const p = { decode_weight: 0, memory_weight: 0, prior_tokens_per_sec: 1000, backlog_weight: 1, session_weight: 0 };
  // the least loaded candidate has 2,000 tokens (2 s) booked: uncached tokens weigh 1 + 2 = 3 times
  const [cached, cold] = costs([cand(1, { cached: 1200, queued: 2000 }), cand(2, { queued: 3000 })], p);
  assert.equal(cached, (2000 + 3 * 400) / 1000);
  assert.equal(cold, (3000 + 3 * 1600) / 1000);
  // a session's second request: every rank but its last one costs session_weight x prompt / rate more
  const policy = createTtftPolicy({ modelName: 'm', routingGroup: 'g', blockSize: 16 }, { ...p, backlog_weight: 0, session_weight: 0.5 }, { rates: () => new PrefillRates() });
  const ctx = selectionContext({ promptTokens: 1600, blockSize: 16, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g', sessionId: 's1' });
  const two = [cand(1, {}), cand(2, { queued: 100 })];
  assert.equal(runPolicy(policy, ctx, two, seededRng(1)), 0, 'first request: the idle rank');
  const later = [cand(1, { queued: 700 }), cand(2, { queued: 100 })];
  assert.equal(runPolicy(policy, ctx, later, seededRng(1)), 0, '600 tokens more wait beats 800 tokens of moving');
  const busier = [cand(1, { queued: 1000 }), cand(2, { queued: 100 })];
  assert.equal(runPolicy(policy, ctx, busier, seededRng(1)), 1, 'moving pays once the home rank is 900 tokens behind');
  assert.equal(runPolicy(policy, ctx, [cand(1, { queued: 700 }), cand(2, { queued: 100 })], seededRng(1)), 1, 'home follows the session');
});

test('bookings a replica peer mirrored feed the learner like local ones', async () => {
  const { core, clock } = makeCore({ SELECT_SERVICE_ROUTING_POLICY: 'ttft' });
  core.upsertWorker(worker(1));
  const ref = { modelName: 'model', routingGroup: 'default', blockSize: 4, requestId: 'peer-1', workerId: 1n, dpRank: 0, loraName: null };
  assert.equal(core.applyReplicaEvent({ ...ref, kind: 'add', seq: null, trackPrefillTokens: true, expectedOutputTokens: null, prefillTokens: 8000 }), true);
  clock.advance(400);
  assert.equal(core.applyReplicaEvent({ ...ref, kind: 'prefill_complete' }), true);
  const o = core.partition('model', 'default')!.loads.prefillRates.observed('1:0')!;
  assert.deepEqual([o.samples, o.tokens, o.seconds], [1, 8000, 0.4]);
  // and a local selection routes with ttft
  const r = await core.selectAndReserve({ model_name: 'model', token_ids: Array.from({ length: 8 }, (_, i) => i + 1) });
  assert.equal(r.worker_id, 1n);
});

test('learner: the rate\'s standard error, and a rate believed only beyond its noise', () => {
  assert.equal(rateStandardError(undefined), Infinity);
  const exact = { tokens: 20_000, seconds: 2, samples: 2, tt: 2e8, ts: 2e4, ss: 2 }; // 10k tokens in 1 s, twice
  assert.equal(rateStandardError(exact), 0);
  const r = new PrefillRates();
  for (let i = 0; i < 40; i++) r.observe('k', i % 2 ? 12_000 : 8_000, i * 1000, i * 1000 + 1000); // 8k or 12k a second
  const o = r.observed('k')!;
  const se = rateStandardError(o);
  assert.ok(se > 100 && se < 2000, `${se}`);
  // the pooled rate 10,200 lies within the noise of this rank's ~10k: the pooled rate is believed
  assert.equal(credibleRate(o, 10_200, 0), 10_200);
  // a fleet at 20k: the rank is clearly slower, and keeps what its noise cannot explain
  const own = o.tokens / o.seconds;
  assert.ok(Math.abs(credibleRate(o, 20_000, 0) - (own + CREDIBLE_Z * se)) < 1e-6);
});

test('ttft cost: new blocks beyond a rank\'s free KV evict cached ones, charged evict_weight of their recompute', () => {
  const p = { decode_weight: 0, memory_weight: 0, prior_tokens_per_sec: 1000, evict_weight: 0.5 };
  // 1,600 uncached tokens = 100 blocks of 16; capacity 100 blocks
  const held = (w: bigint): number => (w === 1n ? 0 : w === 2n ? 40 : 100);
  const [empty, part, full, unknown] = costs([cand(1, {}), cand(2, {}), cand(3, {}), cand(4, { capacity: null })], p, new PrefillRates(), held);
  assert.equal(empty, 1.6, 'a rank with room for the request loses nothing');
  assert.ok(Math.abs(part - (1.6 + (0.5 * 40 * 16) / 1000)) < 1e-12, `40 blocks evicted (${part})`);
  assert.ok(Math.abs(full - (1.6 + 0.8)) < 1e-12, `every block evicts one (${full})`);
  assert.equal(unknown, 1.6, 'without total_kv_blocks the term reads 0');
});

test('ttft picks among near-equal costs the rank it chose least recently', () => {
  const policy = createTtftPolicy({ modelName: 'm', routingGroup: 'g', blockSize: 16 }, { tie_tolerance: 0.05 }, { rates: () => new PrefillRates() });
  const ctx = selectionContext({ promptTokens: 1600, blockSize: 16, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g' });
  // costs 1.6 s, 1.65 s (within 5%) and 3.2 s
  const three = (): CandidateView[] => [cand(1, {}), cand(2, { queued: 50 }), cand(3, { queued: 1600 })];
  const seen = [0, 1, 2, 3].map(() => runPolicy(policy, ctx, three(), seededRng(7)));
  assert.deepEqual([...new Set(seen.slice(0, 2))].sort(), [0, 1], 'both near-equal ranks are used in turn');
  assert.equal(seen[2], seen[0]);
  assert.ok(!seen.includes(2), 'a clearly worse rank is never chosen');
  const strict = createTtftPolicy({ modelName: 'm', routingGroup: 'g', blockSize: 16 }, { tie_tolerance: 0 }, { rates: () => new PrefillRates() });
  for (let k = 0; k < 3; k++) assert.equal(runPolicy(strict, ctx, three(), seededRng(k)), 0);
});

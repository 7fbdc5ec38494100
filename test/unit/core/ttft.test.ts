/**
 * The `ttft` routing policy (select/ttft.ts): each term of its cost against the model's own
 * predictions, the choices they lead to (cache against queue, a busy rank's arrivals, a full
 * rank, eviction), the tie rotation, and the policy through a real core with max_num_seqs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTtftPolicy } from '../../../src/core/select/ttft.js';
import { TtftModel, RANK_FACTOR_SE, type RankState } from '../../../src/core/load/ttft-model.js';
import { runPolicy, selectionContext, type CandidateView } from '../../../src/core/select/policy.js';
import { TTFT_DEFAULTS } from '../../../src/core/select/routing-policy.js';
import { seededRng } from '../../../src/core/random.js';
import { ManualClock, close, makeCore, worker } from './core-helpers.js';

interface Rank { cached?: number; queued?: number; requests?: number; context?: number; capacity?: number | null; busy?: number; held?: number; slots?: number }

/** A candidate view with the accessors the ttft scorer reads (block size 16). */
function rank(workerId: number, o: Rank = {}): CandidateView {
  return {
    worker: () => ({ workerId: BigInt(workerId), dpRank: 0, taints: [] }),
    deviceOverlapBlocks: () => (o.cached ?? 0) / 16, hostOverlapBlocks: () => 0, diskOverlapBlocks: () => 0,
    accountingCacheEstimate: () => o.cached ?? 0, hasTierMatches: () => false, sharedHits: () => 0, isAvailable: () => true,
    activePrefillTokens: () => o.queued ?? 0, decodeCostBlocks: () => o.held ?? 0, activeRequests: () => o.requests ?? 0,
    prefillPendingRequests: () => 0, totalKvBlocks: () => (o.capacity === undefined ? null : o.capacity),
    maxNumBatchedTokens: () => 16_384, maxNumSeqs: () => o.slots ?? null, busyFraction: () => o.busy ?? 0, pendingSeconds: () => 0,
    contextTokens: () => o.context ?? 0, activeOverlapBlocks: () => 0,
  };
}

const ISL = 1600;
const ctx = (expected = 100) => selectionContext({ promptTokens: ISL, blockSize: 16, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g', expectedOutputTokens: expected });

function setup(params: Record<string, number> = {}, heldBlocks?: (w: bigint) => number, liveSharing?: (words: Uint32Array, blocks: number) => number) {
  const model = new TtftModel(), clock = new ManualClock();
  const policy = createTtftPolicy({ modelName: 'm', routingGroup: 'g', blockSize: 16 }, params, { model: () => model, heldBlocks, liveSharing, clock });
  const costs = (cands: CandidateView[], c = ctx()): number[] => {
    const out = new Float64Array(cands.length);
    policy.scorers[0].score(c, cands, out);
    return [...out];
  };
  return { model, clock, policy, costs };
}

const state = (o: Partial<RankState>): RankState => ({ prefillTokens: 0, requests: 0, contextTokens: 0, stepTokens: 16_384, slots: 0, ...o });

test('without arrivals or capacity the cost is the predicted time to first token of the request there', () => {
  const { model, costs } = setup();
  const [a, b, c] = costs([rank(1, { cached: 1200 }), rank(2), rank(3, { cached: 1200, queued: 3000, context: 200_000 })]);
  assert.equal(a, model.predict('1:0', state({ prefillTokens: 400 })));
  assert.equal(b, model.predict('2:0', state({ prefillTokens: 1600 })));
  assert.equal(c, model.predict('3:0', state({ prefillTokens: 3400, contextTokens: 200_000 })));
  assert.ok(a < b, 'its cached prefix makes a rank faster');
  assert.ok(c > b, 'a queue and heavy decodes make a cached rank slower than an idle one');
});

test('factor_se sets how many standard errors the partition\'s model needs before it believes a rank\'s factor', () => {
  assert.equal(TTFT_DEFAULTS.factor_se, RANK_FACTOR_SE, 'the policy\'s default is the model\'s');
  const scored = (params: Record<string, number>): number => {
    const { model, costs } = setup(params);
    model.factorSe = 99;
    costs([rank(1), rank(2)]);
    return model.factorSe;
  };
  assert.equal(scored({}), TTFT_DEFAULTS.factor_se);
  assert.equal(scored({ factor_se: 1.5 }), 1.5);
});

test('delay: arrivals at the rank wait for the request\'s work, through the busy period, and see two longer steps', () => {
  const { model, clock, policy, costs } = setup();
  // rank 1 has been booked twice a second for the last 20 s and was busy half the time
  for (let i = 0; i < 40; i++) { policy.onBooked!({ workerId: 1n, dpRank: 0, prefixWords: new Uint32Array(0), promptTokens: ISL }); clock.advance(500); }
  const r = rank(1, { busy: 0.5, context: 100_000 });
  const [cost] = costs([r]);
  const s = state({ prefillTokens: ISL, contextTokens: 100_000 });
  const ttft = model.predict('1:0', s), work = ISL * model.secondsPerToken('1:0', s);
  const life = 100 * model.stepSeconds('1:0', s), added = model.addedStepSeconds('1:0', ISL + 50);
  const span = 10 * (1 - Math.exp(-20 / 10)), arrivals = [...Array(40).keys()].reduce((w, i) => w + Math.exp(-(20 - 0.5 * i) / 10), 0) / span;
  const expected = ttft + arrivals * ((work * ttft) / (1 - 0.5) + life * 2 * added);
  assert.ok(Math.abs(cost - expected) < 1e-9 * expected, `${cost} vs ${expected}`);
  assert.ok(Math.abs(arrivals - 2) < 0.3, `about 2 bookings/s: ${arrivals}`);
  const [none] = setup({ delay_weight: 0 }).costs([r]);
  assert.equal(none, ttft, 'delay_weight=0 leaves the prediction alone');
});

test('delay: a rank passed over is charged, for the work, no fewer arrivals than its share of the partition\'s by measured speed', () => {
  const { model, clock, policy, costs } = setup();
  // every booking of the last 20 s went to rank 1: rank 2's own rate is 0
  for (let i = 0; i < 40; i++) { policy.onBooked!({ workerId: 1n, dpRank: 0, prefixWords: new Uint32Array(0), promptTokens: ISL }); clock.advance(500); }
  const partition = [...Array(40).keys()].reduce((w, i) => w + Math.exp(-(20 - 0.5 * i) / 10), 0) / (10 * (1 - Math.exp(-20 / 10)));
  const s = state({ prefillTokens: ISL });
  const charged = (): number => {
    const [, cost] = costs([rank(1), rank(2, { busy: 0.5 })]);
    const ttft = model.predict('2:0', s), work = ISL * model.secondsPerToken('2:0', s);
    // its decode's part is charged its own arrivals, none
    return (cost - ttft) / ((work * ttft) / (1 - 0.5));
  };
  close(charged(), partition / 2, 1e-9, 'ranks alike: half the partition\'s bookings');
  // rank 2 measured slower than the fit (its completions took 1.8x the prediction): a smaller share
  for (let i = 0; i < 200; i++) model.observe('2:0', state({ prefillTokens: 2000 + i }), 1.8 * model.predict('2:0', state({ prefillTokens: 2000 + i })));
  const f = model.measuredFactor('2:0');
  assert.ok(f > 1.3, `measured ${f}`);
  close(charged(), (partition * (1 / f)) / (1 + 1 / f), 1e-9, 'its share by speed');
  // the rank the bookings went to is charged its own rate, above its share
  const [cost1] = costs([rank(1), rank(2)]);
  const t1 = model.predict('1:0', s), w1 = ISL * model.secondsPerToken('1:0', s);
  const life = 100 * model.stepSeconds('1:0', s), added = model.addedStepSeconds('1:0', ISL + 50);
  close(cost1, t1 + partition * (w1 * t1 + life * 2 * added), 1e-9, 'own rate');
});

test('a busy rank with the prefix loses to an idle one once the work it saves no longer pays for its queue', () => {
  const { costs } = setup();
  const cachedShortQueue = costs([rank(1, { cached: 1500, queued: 500 }), rank(2)]);
  assert.ok(cachedShortQueue[0] < cachedShortQueue[1], 'short queue: the cache wins');
  const cachedLongQueue = costs([rank(1, { cached: 1500, queued: 30_000 }), rank(2)]);
  assert.ok(cachedLongQueue[0] > cachedLongQueue[1], 'long queue: the idle rank wins');
});

test('a full rank (max_num_seqs reached) waits for a slot; a rank without the limit registered does not', () => {
  const { model, costs } = setup();
  for (let i = 0; i < 50; i++) model.observeOutput(400);
  const [full, unknown, free] = costs([rank(1, { requests: 70, slots: 64 }), rank(2, { requests: 70 }), rank(3, { requests: 10, slots: 64 })]);
  const s = state({ prefillTokens: ISL, requests: 70, slots: 64 });
  assert.ok(full - unknown > 0.9 * model.slotWait('1:0', s), `${full} - ${unknown}`);
  assert.ok(full > free);
});

test('evict and preempt: new blocks beyond free KV, and held blocks beyond capacity, are charged their recompute', () => {
  const { model, costs } = setup({}, (w) => (w === 1n ? 95 : 0));
  const [tight, roomy] = costs([rank(1, { capacity: 100 }), rank(2, { capacity: 100 })]);
  const s = state({ prefillTokens: ISL });
  const perToken = model.secondsPerToken('1:0', s);
  // 100 new blocks, 5 free: 95 evicted, half of them needed again
  assert.ok(Math.abs(tight - roomy - TTFT_DEFAULTS.evict_weight * 95 * 16 * perToken) < 1e-12);
  const [over] = costs([rank(3, { capacity: 100, held: 120 })]);
  // 120 held + 7 output blocks of its expected 100 tokens, 27 past capacity
  assert.ok(Math.abs(over - roomy - 27 * 16 * perToken) < 1e-12);
});

test('near-equal costs go to the rank chosen least recently', () => {
  const { policy } = setup({ tie_tolerance: 0.05 });
  const rng = seededRng(1);
  const cands = [rank(1), rank(2), rank(3)];
  const picks = Array.from({ length: 6 }, () => runPolicy(policy, ctx(), cands, rng));
  assert.deepEqual(new Set(picks.slice(0, 3)).size, 3, `each rank once first: ${picks}`);
  assert.deepEqual(picks.slice(3), picks.slice(0, 3), 'then the same rotation');
});

test('the policy through a core: a rank at max_num_seqs is passed over while another has room', async () => {
  const { core } = makeCore({ SELECT_SERVICE_ROUTING_POLICY: 'ttft' });
  core.upsertWorker(worker(1, { max_num_seqs: 2 }));
  core.upsertWorker(worker(2, { max_num_seqs: 2 }));
  assert.equal(core.listWorkers()[0].max_num_seqs, 2, 'the record keeps it');
  const tokens = Array.from({ length: 64 }, (_, i) => i + 1);
  const placed: bigint[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await core.selectAndReserve({ model_name: 'model', selection_id: `r${i}`, token_ids: tokens, expected_output_tokens: 100 });
    placed.push(r.worker_id);
  }
  // the same prompt: the cache pulls it to one worker until that worker's two slots are taken
  assert.deepEqual(placed.filter((w) => w === 1n).length, 2, `${placed}`);
  assert.deepEqual(placed.filter((w) => w === 2n).length, 2, `${placed}`);
});


test('spread: a hot prefix earns a new copy on a rank that steps faster than its holders, by its share of the traffic', () => {
  // 100 prompt blocks; the live bookings sharing the first `blocks` of them
  const words = new Uint32Array(200).map((_, k) => k + 1);
  const asked: number[] = [];
  const live = (_w: Uint32Array, blocks: number): number => { asked.push(blocks); return 30; };
  const c = selectionContext({ promptTokens: ISL, blockSize: 16, tracksPrefillTokens: true, modelName: 'm', routingGroup: 'g', expectedOutputTokens: 100, prefixWords: words });
  // rank 1 holds 1,200 of the 1,600 tokens and decodes a heavy context (slow steps); 2 is idle;
  // 3 holds nothing either and is slower still than the holder
  const ranks = [rank(1, { cached: 1200, requests: 8, context: 200_000 }), rank(2), rank(3, { requests: 16, context: 400_000 })];
  const base = setup().costs(ranks, c);
  const { model, costs } = setup({}, undefined, live);
  const [h, idle, slow] = costs(ranks, c);
  assert.deepEqual(asked, [1200 / 16], 'the traffic of the holder\'s cached prefix');
  const holderStep = model.stepSeconds('1:0', state({ prefillTokens: 400, requests: 8, contextTokens: 200_000 }));
  const idleStep = model.stepSeconds('2:0', state({ prefillTokens: ISL }));
  const credit = TTFT_DEFAULTS.spread_secs * (30 / (100 * holderStep) / 2) * (holderStep - idleStep);
  assert.ok(credit > 0);
  assert.equal(h, base[0], 'the holder is not credited');
  assert.ok(Math.abs(idle - (base[1] - credit)) < 1e-9 * Math.abs(base[1]), `${idle} vs ${base[1] - credit}`);
  assert.equal(slow, base[2], 'a rank stepping slower than the holder is not credited');
  const [, off] = setup({ spread_secs: 0 }, undefined, live).costs(ranks, c);
  assert.equal(off, base[1], 'spread_secs=0 turns it off');
  const [, quiet] = setup({}, undefined, () => 0).costs(ranks, c);
  assert.equal(quiet, base[1], 'no live traffic on the prefix, no credit');
  const [, one] = setup({}, undefined, () => 1).costs(ranks, c);
  assert.equal(one, base[1], 'one live booking (a conversation\'s turn in flight) is no traffic to share: no credit');
  const [, two] = setup({}, undefined, () => 2).costs(ranks, c);
  assert.ok(two < base[1], 'two live bookings are');
});

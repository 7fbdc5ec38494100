import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  costParams, defaultCosts, effectivePrefillTokens, eligible, pickByCost, preferredTaintMultiplier, requestBlocks,
  type Candidate, type CostParams,
} from '../../../src/core/select/selector.js';
import { SelectionError } from '../../../src/core/errors.js';
import { seededRng, type Rng } from '../../../src/core/random.js';

const seeded = (seed: number): Rng => seededRng(seed);
const fixed = (...us: number[]): Rng => { let i = 0; return { next: () => us[i++ % us.length], u64: () => 0n }; };
const noDraw: Rng = { next: () => { throw new Error('rng drawn'); }, u64: () => { throw new Error('rng drawn'); } };

function cand(o: Partial<Candidate> = {}): Candidate {
  return {
    workerId: 1n, dpRank: 0, taints: [], deviceBlocks: 0, hostExtBlocks: 0, diskExtBlocks: 0, sharedBeyondDeviceBlocks: 0,
    cachedTokens: 0, hasLoad: true, activePrefillTokens: 0, potentialDecodeBlocks: 0, activeRequests: 0, prefillPendingRequests: 0,
    totalKvBlocks: null, maxNumBatchedTokens: null, ...o,
  };
}
const P: CostParams = {
  blockSize: 16, islTokens: 64, trackPrefillTokens: true, overlapScoreCredit: 1, overlapScoreCreditDecay: 0,
  prefillLoadScale: 1, decodeActiveRequestWeight: 0, hostCacheHitWeight: 0.75, diskCacheHitWeight: 0.25,
  sharedCacheMultiplier: 0, preferredTaints: {},
};
const cost1 = (c: Candidate, p: Partial<CostParams> = {}): number => defaultCosts([c], { ...P, ...p })[0];
const close = (a: number, b: number, eps = 1e-12) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

test('helpers: effective prefill saturates, request blocks is ceil and at least 1', () => {
  assert.equal(effectivePrefillTokens(64, 32), 32);
  assert.equal(effectivePrefillTokens(64, 100), 0);
  assert.equal(effectivePrefillTokens(64, -5), 64);
  assert.equal(requestBlocks(65, 16), 5);
  assert.equal(requestBlocks(64, 16), 4);
  assert.equal(requestBlocks(0, 16), 1);
});

test('cost with load: (active + effective + cached)/bs - device credit, plus decode blocks', () => {
  // raw = 32 + (64-32) + 32 = 96 tokens = 6 blocks; credit 2; adjusted 4; + decode 10 = 14
  const c = cand({ activePrefillTokens: 32, cachedTokens: 32, deviceBlocks: 2, potentialDecodeBlocks: 10 });
  assert.equal(cost1(c), 14);
  // credit never drives the prefill term negative
  assert.equal(cost1(cand({ deviceBlocks: 50, potentialDecodeBlocks: 3 })), 3);
  // cached beyond the ISL: effective 0, raw = active + cached
  assert.equal(cost1(cand({ cachedTokens: 80 })), 5);
});

test('cost without load tracking: raw prefill is the ISL and load fields are ignored', () => {
  const c = cand({ hasLoad: false, deviceBlocks: 1, activePrefillTokens: 999, potentialDecodeBlocks: 99, activeRequests: 7 });
  assert.equal(cost1(c, { decodeActiveRequestWeight: 1 }), 3); // 64/16 - 1
});

test('overlap_score_credit scales the device credit only', () => {
  const c = cand({ deviceBlocks: 2, hostExtBlocks: 4 }); // raw 4 blocks
  assert.equal(cost1(c, { overlapScoreCredit: 0.5 }), 4 - (1 + 3));
  assert.equal(cost1(c, { overlapScoreCredit: 0 }), 4 - 3);
  assert.equal(cost1(c, { overlapScoreCredit: 0, hostCacheHitWeight: 0 }), 4);
});

test('tier weights and the shared-cache multiplier add credit blocks', () => {
  // isl 128 = 8 blocks; credit = 1 + 0.75*2 + 0.25*4 + 0.5*3 = 5; adjusted 3; + decode 2
  const c = cand({ deviceBlocks: 1, hostExtBlocks: 2, diskExtBlocks: 4, sharedBeyondDeviceBlocks: 3, potentialDecodeBlocks: 2 });
  assert.equal(cost1(c, { islTokens: 128, sharedCacheMultiplier: 0.5 }), 5);
  assert.equal(cost1(c, { islTokens: 128 }), 6.5); // multiplier 0: shared hits ignored
  assert.equal(cost1(c, { islTokens: 128, hostCacheHitWeight: 0, diskCacheHitWeight: 0 }), 9);
});

test('prefill_load_scale multiplies the adjusted prefill; active requests add weight * count', () => {
  const c = cand({ activePrefillTokens: 32, cachedTokens: 32, deviceBlocks: 2, potentialDecodeBlocks: 10, activeRequests: 4 });
  assert.equal(cost1(c, { prefillLoadScale: 2 }), 18);
  assert.equal(cost1(c, { prefillLoadScale: 0 }), 10);
  assert.equal(cost1(c, { decodeActiveRequestWeight: 0.5 }), 16);
});

test('credit decay: 1/(1 + rate*((active - min)/bs)/request_blocks) on the device credit', () => {
  const a = cand({ workerId: 1n, deviceBlocks: 4 });
  const b = cand({ workerId: 2n, deviceBlocks: 4, activePrefillTokens: 64 });
  // B: (64-0)/16 = 4 blocks over 4 request blocks -> decay 1/(1+1) = 0.5; raw 8 blocks - 2 = 6
  assert.deepEqual([...defaultCosts([a, b], { ...P, overlapScoreCreditDecay: 1 })], [0, 6]);
  assert.deepEqual([...defaultCosts([a, b], P)], [0, 4]);
  // the minimum is over the given candidates: alone, B has no decay
  assert.equal(defaultCosts([b], { ...P, overlapScoreCreditDecay: 1 })[0], 4);
  // rate 3: 1/(1+3) = 0.25 -> 8 - 1 = 7
  assert.equal(defaultCosts([a, b], { ...P, overlapScoreCreditDecay: 3 })[1], 7);
});

test('track_prefill_tokens=false: no prefill term and no decay', () => {
  const a = cand({ deviceBlocks: 1 });
  const b = cand({ deviceBlocks: 4, activePrefillTokens: 640, potentialDecodeBlocks: 5, cachedTokens: 64 });
  assert.deepEqual([...defaultCosts([a, b], { ...P, trackPrefillTokens: false, overlapScoreCreditDecay: 1 })], [0, 5]);
  assert.equal(cost1(cand({ hasLoad: false }), { trackPrefillTokens: false }), 0);
});

test('preferred taints: exp(-tanh(sum of matched weights)), bounded by e^-1 and e', () => {
  close(preferredTaintMultiplier(['a', 'b', 'c'], { a: 0.3, b: 0.2, z: 5 }), Math.exp(-Math.tanh(0.5)));
  assert.equal(preferredTaintMultiplier(['x'], { a: 1 }), 1);
  assert.equal(preferredTaintMultiplier([], {}), 1);
  close(preferredTaintMultiplier(['a'], { a: 100 }), Math.exp(-1));
  close(preferredTaintMultiplier(['a'], { a: -100 }), Math.E);
  close(preferredTaintMultiplier(['a', 'a'], { a: 0.4 }), Math.exp(-Math.tanh(0.4))); // a duplicate counts once
  for (const w of [-1e9, -3, -0.5, 0, 0.5, 3, 1e9]) {
    const m = preferredTaintMultiplier(['t'], { t: w });
    assert.ok(m >= Math.exp(-1) - 1e-15 && m <= Math.E + 1e-15, `${w} -> ${m}`);
  }
  const c = cand({ activePrefillTokens: 32, cachedTokens: 32, deviceBlocks: 2, potentialDecodeBlocks: 10, taints: ['gpu', 'fast'] });
  close(cost1(c, { preferredTaints: { fast: 0.5 } }), 14 * Math.exp(-Math.tanh(0.5)));
  assert.equal(cost1(c, { preferredTaints: { slow: 0.5 } }), 14);
});

test('defaultCosts writes into a given buffer and rejects a short one', () => {
  const out = new Float64Array(3).fill(-1);
  const r = defaultCosts([cand(), cand({ potentialDecodeBlocks: 1 })], P, out);
  assert.equal(r, out);
  assert.deepEqual([...out], [4, 5, -1]);
  assert.throws(() => defaultCosts([cand(), cand()], P, new Float64Array(1)), RangeError);
});

test('costParams combines config, effective request values and the request', () => {
  const p = costParams(
    { overlapScoreCreditDecay: 0.2, decodeActiveRequestWeight: 0.1, hostCacheHitWeight: 0.7, diskCacheHitWeight: 0.2 },
    { overlapScoreCredit: 0.9, prefillLoadScale: 1.5, routerTemperature: 0, assumeKvReuse: true, trackPrefillTokens: false, sharedCacheMultiplier: 0.4 },
    { blockSize: 32, islTokens: 100 },
  );
  assert.deepEqual(p, {
    blockSize: 32, islTokens: 100, trackPrefillTokens: false, overlapScoreCredit: 0.9, overlapScoreCreditDecay: 0.2,
    prefillLoadScale: 1.5, decodeActiveRequestWeight: 0.1, hostCacheHitWeight: 0.7, diskCacheHitWeight: 0.2,
    sharedCacheMultiplier: 0.4, preferredTaints: {},
  });
});

test('temperature 0: argmin, no random draw without ties', () => {
  assert.equal(pickByCost([3, 1, 2], 3, 0, noDraw), 1);
  assert.equal(pickByCost([7], 1, 0, noDraw), 0);
  assert.equal(pickByCost([7], 1, 2, noDraw), 0);
  assert.equal(pickByCost([5, 4, 9, 0], 3, 0, noDraw), 1); // only the first n rows count
});

test('temperature 0: ties are broken uniformly (reservoir sampling)', () => {
  const rng = seeded(1);
  const costs = [1, 0, 0, 5, 0];
  const counts = [0, 0, 0, 0, 0];
  const trials = 30000;
  for (let t = 0; t < trials; t++) counts[pickByCost(costs, costs.length, 0, rng)]++;
  assert.equal(counts[0] + counts[3], 0);
  for (const i of [1, 2, 4]) assert.ok(Math.abs(counts[i] / trials - 1 / 3) < 0.015, `row ${i}: ${counts[i]}`);
});

test('no candidates: 503 no endpoints', () => {
  assert.throws(() => pickByCost([], 0, 0, noDraw), (e: unknown) => e instanceof SelectionError && e.status === 503 && e.code === 'SEL_NO_ENDPOINTS');
});

test('temperature > 0: softmax over min-max normalised costs favours lower cost', () => {
  const rng = seeded(7);
  const trials = 30000;
  let zero = 0;
  for (let t = 0; t < trials; t++) if (pickByCost([0, 1], 2, 1, rng) === 0) zero++;
  const p0 = 1 / (1 + Math.exp(-1));
  assert.ok(Math.abs(zero / trials - p0) < 0.015, `${zero / trials} vs ${p0}`);
  // normalisation: scaling every cost leaves the distribution unchanged
  assert.equal(pickByCost([0, 1000], 2, 1, fixed(0.7)), 0);
  assert.equal(pickByCost([0, 1000], 2, 1, fixed(0.74)), 1);
  // a lower temperature sharpens it
  let zeroCold = 0;
  for (let t = 0; t < trials; t++) if (pickByCost([0, 1], 2, 0.1, rng) === 0) zeroCold++;
  assert.ok(zeroCold / trials > 0.999);
});

test('temperature > 0: first row with cumulative >= u, fallback last', () => {
  const p0 = 1 / (1 + Math.exp(-1));
  assert.equal(pickByCost([0, 1], 2, 1, fixed(p0 - 1e-9)), 0);
  assert.equal(pickByCost([0, 1], 2, 1, fixed(p0 + 1e-9)), 1);
  assert.equal(pickByCost([0, 1], 2, 1, fixed(0.9999999999)), 1);
  assert.equal(pickByCost([2, 0, 1], 3, 1, fixed(0)), 0);
});

test('temperature > 0: all-equal costs are uniform', () => {
  const rng = seeded(3);
  const counts = [0, 0, 0, 0];
  const trials = 40000;
  for (let t = 0; t < trials; t++) counts[pickByCost([3, 3, 3, 3], 4, 0.5, rng)]++;
  for (const c of counts) assert.ok(Math.abs(c / trials - 0.25) < 0.015, `${counts}`);
});

test('temperature > 0: a non-finite range is normalised by max(|cmin|, |cmax|) first', () => {
  // [-1e308, 1e308] -> [-1, 1]: p ∝ [1, e^-1], as for [0, 1]
  const p0 = 1 / (1 + Math.exp(-1));
  assert.equal(pickByCost([-1e308, 1e308], 2, 1, fixed(p0 - 1e-9)), 0);
  assert.equal(pickByCost([-1e308, 1e308], 2, 1, fixed(p0 + 1e-9)), 1);
});

const W = [
  cand({ workerId: 1n, dpRank: 0, taints: ['gpu'] }),
  cand({ workerId: 1n, dpRank: 1, taints: ['gpu', 'fast'] }),
  cand({ workerId: 2n, dpRank: 0, taints: ['fast'] }),
  cand({ workerId: 3n, dpRank: 0, taints: [] }),
];
const ids = (cs: Candidate[]) => cs.map((c) => `${c.workerId}:${c.dpRank}`);

test('eligible: allowed ids, required taints, pinned rank, affinity target', () => {
  assert.deepEqual(ids(eligible(W, { requiredTaints: [] })), ['1:0', '1:1', '2:0', '3:0']);
  assert.deepEqual(ids(eligible(W, { requiredTaints: [], allowedWorkerIds: [] })), [], 'an empty allow-set allows nothing (Dynamo)');
  assert.deepEqual(ids(eligible(W, { requiredTaints: [], allowedWorkerIds: [3n, 2n] })), ['2:0', '3:0']);
  assert.deepEqual(ids(eligible(W, { requiredTaints: ['fast'] })), ['1:1', '2:0']);
  assert.deepEqual(ids(eligible(W, { requiredTaints: ['fast', 'gpu'] })), ['1:1']);
  assert.deepEqual(ids(eligible(W, { requiredTaints: ['none'] })), []);
  assert.deepEqual(ids(eligible(W, { requiredTaints: [], pinned: { workerId: 1n, dpRank: 1 } })), ['1:1']);
  assert.deepEqual(ids(eligible(W, { requiredTaints: [], pinned: { workerId: 1n, dpRank: 5 } })), []);
  assert.deepEqual(ids(eligible(W, { requiredTaints: [], affinityTarget: { workerId: 1n } })), ['1:0', '1:1']);
  assert.deepEqual(ids(eligible(W, { requiredTaints: [], affinityTarget: { workerId: 1n, dpRank: 0 } })), ['1:0']);
  assert.deepEqual(ids(eligible(W, { requiredTaints: ['fast'], pinned: { workerId: 1n, dpRank: 0 } })), []);
  assert.deepEqual(ids(eligible(W, { requiredTaints: [], pinned: { workerId: 2n, dpRank: 0 }, allowedWorkerIds: [2n] })), ['2:0']);
});

test('eligible: a pinned worker outside the allowed set (an empty one too) is a 400', () => {
  assert.throws(
    () => eligible(W, { requiredTaints: [], allowedWorkerIds: [2n], pinned: { workerId: 1n, dpRank: 0 } }),
    (e: unknown) => e instanceof SelectionError && e.status === 400 && e.code === 'SEL_PINNED_NOT_ALLOWED'
      && e.message === 'pinned worker 1 is not in allowed worker set',
  );
  // the 400 wins even when nothing would match anyway
  assert.throws(() => eligible([], { requiredTaints: [], allowedWorkerIds: [2n], pinned: { workerId: 9n, dpRank: 0 } }), SelectionError);
  assert.throws(() => eligible(W, { requiredTaints: [], allowedWorkerIds: [], pinned: { workerId: 1n, dpRank: 0 } }), SelectionError);
});

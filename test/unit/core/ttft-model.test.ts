/**
 * The learned time-to-first-token model (load/ttft-model.ts) and what the load table feeds it:
 * the fit recovers an engine's step costs from completions, on relative errors, robust to an odd
 * completion; a rank's factor only where it is clearly slower; the slot wait past max_num_seqs;
 * the prefill that remains of what is booked; and the per-rank counters loads keep for it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TtftModel, DEFAULT_STEP_TOKENS, RANK_FACTOR_SE, outputTokensFromBlocks, type RankState } from '../../../src/core/load/ttft-model.js';
import { ActiveLoads } from '../../../src/core/load/loads.js';
import { seededRng } from '../../../src/core/random.js';
import { ManualClock, close } from './core-helpers.js';

/** An engine's true law: steps x (fixed + per context token x C) + per prefill token x T. */
const ENGINE = { step: 0.006, perToken: 1 / 58_000, perContext: 5e-8 };
const law = (s: RankState, speed = 1): number => {
  const steps = 1 + s.prefillTokens / (s.stepTokens || DEFAULT_STEP_TOKENS);
  return speed * (steps * (ENGINE.step + ENGINE.perContext * s.contextTokens) + ENGINE.perToken * s.prefillTokens);
};

/** Random rank states of a varied workload (short and long prefills, light and heavy decode). */
function states(n: number, seed = 1): RankState[] {
  const rng = seededRng(seed);
  return Array.from({ length: n }, () => ({
    prefillTokens: Math.round(rng.next() < 0.8 ? 50 + rng.next() * 2000 : 5000 + rng.next() * 25_000),
    requests: Math.floor(rng.next() * 40), contextTokens: Math.round(rng.next() * 600_000), stepTokens: 16_384, slots: 0,
  }));
}

test('the fit recovers the engine from completions, from a prior 3x off its prefill rate', () => {
  const m = new TtftModel();
  const before = m.predict('1:0', { prefillTokens: 20_000, requests: 0, contextTokens: 0, stepTokens: 16_384, slots: 0 });
  for (const s of states(600)) m.observe('1:0', s, law(s));
  const c = m.coefficients();
  close(c.perPrefillTokenSec, ENGINE.perToken, 0.1, 'seconds per prefill token');
  close(c.perContextTokenStepSec, ENGINE.perContext, 0.15, 'step seconds per context token');
  close(c.stepSec, ENGINE.step, 0.25, 'step seconds');
  const long = { prefillTokens: 20_000, requests: 10, contextTokens: 300_000, stepTokens: 16_384, slots: 0 };
  close(m.predict('1:0', long), law(long), 0.05, 'a long prefill on a busy rank');
  assert.ok(Math.abs(before - law(long)) > 0.3 * law(long), 'the prior alone was far off (the fit did the work)');
});

test('one odd completion (a client that reported late) moves the fit little', () => {
  const m = new TtftModel();
  for (const s of states(400)) m.observe('1:0', s, law(s));
  const s: RankState = { prefillTokens: 500, requests: 5, contextTokens: 50_000, stepTokens: 16_384, slots: 0 };
  const p0 = m.predict('1:0', s);
  m.observe('1:0', s, 30); // 30 s for what takes ~20 ms
  assert.ok(m.predict('1:0', s) < p0 * 1.5, `${m.predict('1:0', s)} after one outlier, was ${p0}`);
});

test('a rank twice as slow gets a factor near 2; ranks alike keep 1', () => {
  const m = new TtftModel();
  const all = states(1200, 3);
  all.forEach((s, i) => {
    const key = `${i % 4}:0`;
    m.observe(key, s, law(s, key === '3:0' ? 2 : 1) * (1 + 0.05 * Math.sin(i))); // 5% noise
  });
  for (const k of ['0:0', '1:0', '2:0']) assert.ok(m.rankFactor(k) < 1.2, `${k}: ${m.rankFactor(k)}`);
  assert.ok(m.rankFactor('3:0') > 1.5, `slow rank: ${m.rankFactor('3:0')}`);
  assert.equal(m.rankFactor('9:0'), 1, 'a rank never observed');
});

test('a rank\'s factor is moved toward 1 by factorSe standard errors: none gives the measured ratio, more believe less', () => {
  const all = states(600, 5);
  const factor = (se: number): number => {
    const m = new TtftModel();
    m.factorSe = se;
    all.forEach((s, i) => m.observe(`${i % 2}:0`, s, law(s, i % 2 === 1 ? 1.6 : 1) * (1 + 0.1 * Math.sin(i))));
    return m.rankFactor('1:0');
  };
  assert.equal(new TtftModel().factorSe, RANK_FACTOR_SE);
  const [raw, two, three] = [factor(0), factor(2), factor(3)];
  assert.ok(raw > three && two > three && three > 1, `0 SE ${raw}, 2 SE ${two}, 3 SE ${three}`);
  close(raw - three, 1.5 * (raw - two), 1e-9, 'the slack grows with factorSe');
  assert.equal(factor(1000), 1, 'never believed');
  // the measured factor is the ratio itself, whatever factorSe
  const m = new TtftModel();
  m.factorSe = 1000;
  all.forEach((s, i) => m.observe(`${i % 2}:0`, s, law(s, i % 2 === 1 ? 1.6 : 1) * (1 + 0.1 * Math.sin(i))));
  close(m.measuredFactor('1:0'), raw, 1e-9, 'measured: the unshrunk ratio');
  assert.equal(m.rankFactor('1:0'), 1);
  assert.equal(m.measuredFactor('9:0'), 1, 'a rank never observed');
});

test('output tokens from the blocks a booking\'s output opened (Dynamo\'s rule): the middle of their range, unbiased', () => {
  // 2,193 prompt tokens in 512-token blocks leave 367 in the last one
  assert.equal(outputTokensFromBlocks(2193, 0, 512), 183.5);
  assert.equal(outputTokensFromBlocks(2193, 1, 512), 367 + 256);
  assert.equal(outputTokensFromBlocks(2193, 3, 512), 367 + 2.5 * 512);
  assert.equal(outputTokensFromBlocks(1024, 0, 512), 0, 'a full last block: the first output token opens one');
  assert.equal(outputTokensFromBlocks(1024, 2, 512), 768);
  // over outputs spread evenly (to a block boundary) the estimates average the true mean within
  // half a token; whole blocks read far less when the room left in the prompt's block is large
  for (const [isl, bs] of [[2193, 512], [2048 + 100, 512], [777, 16], [4000, 64]]) {
    const room = Math.ceil(isl / bs) * bs - isl;
    let truth = 0, est = 0, whole = 0, n = 0;
    for (let o = 1; o <= room + 3 * bs; o++) {
      const opened = Math.ceil((isl + o) / bs) - Math.ceil(isl / bs);
      truth += o; est += outputTokensFromBlocks(isl, opened, bs); whole += opened * bs; n++;
    }
    assert.ok(Math.abs(est / n - truth / n) <= 0.5, `isl ${isl}, block ${bs}: estimate ${est / n} vs ${truth / n}`);
    if (bs === 512) assert.ok(whole / n < 0.9 * (truth / n), `whole blocks read ${whole / n} of ${truth / n}`);
  }
});

test('the slot wait: its place past max_num_seqs times a request decode over the slots', () => {
  const m = new TtftModel();
  for (let i = 0; i < 100; i++) m.observeOutput(200);
  const s: RankState = { prefillTokens: 100, requests: 66, contextTokens: 0, stepTokens: 16_384, slots: 64 };
  const step = m.stepSeconds('1:0', s);
  close(m.slotWait('1:0', s), (3 * 200 * step) / 64, 1e-9, 'three ahead for a slot');
  assert.equal(m.slotWait('1:0', { ...s, requests: 63 }), 0, 'a free slot');
  assert.equal(m.slotWait('1:0', { ...s, slots: 0 }), 0, 'no limit registered');
  close(m.predict('1:0', s) - m.predict('1:0', { ...s, slots: 0 }), m.slotWait('1:0', s), 1e-9, 'predict adds it');
});

test('what remains of booked prefill: the rank worked through it since its oldest booking arrived', () => {
  const m = new TtftModel();
  const s: RankState = { prefillTokens: 0, requests: 1, contextTokens: 0, stepTokens: 16_384, slots: 0 };
  const rate = 1 / m.secondsPerToken('1:0', s);
  assert.equal(m.remainingPrefill('1:0', 10_000, 0, s), 10_000);
  close(m.remainingPrefill('1:0', 10_000, 0.1, s), 10_000 - 0.1 * rate, 1e-9, 'after 0.1 s');
  assert.equal(m.remainingPrefill('1:0', 10_000, 100, s), 0, 'never below 0');
});

test('loads: per rank the bookings awaiting their first token, their context, the busy fraction; every first token feeds the model', () => {
  const clock = new ManualClock();
  const l = new ActiveLoads({ blockSize: 16, clock, rng: seededRng(1), expirySecs: 300 });
  l.addRank(1n, 0);
  const row = l.rowOf(1n, 0), seq = new Uint32Array(8);
  l.book('a', 1n, 0, { seq, nBlocks: 2, trackPrefillTokens: true, prefillTokens: 1000, islTokens: 1000 });
  l.book('b', 1n, 0, { seq, nBlocks: 2, trackPrefillTokens: false, prefillTokens: 0, islTokens: 500 }); // fully cached
  assert.deepEqual([l.waiting.count[row], l.context[row]], [2, 1500]);
  clock.advance(2000);
  assert.equal(l.waiting.oldestSecs(row, clock.now()), 2);
  close(l.waiting.busyFraction(row, clock.now()), 1 - Math.exp(-2 / 10), 1e-9, 'busy for 2 s of a 10 s window');
  l.prefillComplete('a');
  l.prefillComplete('a'); // repeated: once
  l.prefillComplete('b'); // no prefill tokens, but its first token still says how long it waited
  assert.equal(l.ttftModel.samples, 2);
  assert.equal(l.waiting.count[row], 0);
  assert.equal(l.waiting.oldestSecs(row, clock.now()), 0);
  l.addOutputBlock('a');
  assert.equal(l.context[row], 1516);
  clock.advance(10_000);
  assert.ok(l.waiting.busyFraction(row, clock.now()) < 0.1, 'idle since: the fraction decays');
  l.free('a');
  l.free('b');
  assert.deepEqual([l.waiting.count[row], l.context[row], l.requests[row]], [0, 0, 0]);
  // a: 1,000 tokens leave 8 of the last 16-token block, one block opened: 9-24 tokens, 16;
  // b: 500 leave 12, none opened: 1-12 tokens, 6 (decayed mean of the two)
  close(l.ttftModel.meanOutputTokens, 11, 0.01, 'a freed with one block of output, b with none');
  l.book('c', 1n, 0, { seq, nBlocks: 2, trackPrefillTokens: true, prefillTokens: 10, islTokens: 10 });
  l.free('c'); // freed before its first token: no observation, of its time or its output
  assert.equal(l.ttftModel.samples, 2);
  close(l.ttftModel.meanOutputTokens, 11, 0.01, 'unchanged by c');
});

test('the cost a new decode adds to each step: the fit\'s, never below the prior\'s', () => {
  const m = new TtftModel();
  const prior = m.addedStepSeconds('1:0', 100_000);
  close(prior, 5e-8 * 100_000, 1e-9, 'the prior: 5 ms per step per 100,000 context tokens');
  // an engine whose steps do not grow with context: the fit takes the cost to about 0 ...
  for (const s of states(800, 5)) m.observe('1:0', s, law(s) - ENGINE.perContext * s.contextTokens * (1 + s.prefillTokens / 16_384));
  assert.ok(m.coefficients().perContextTokenStepSec < 0.3 * ENGINE.perContext, `${m.coefficients().perContextTokenStepSec}`);
  // ... the cost to others keeps the prior's
  close(m.addedStepSeconds('1:0', 100_000), prior * m.rankFactor('1:0'), 1e-9, 'the added step');
  // where the fit finds more, it is used
  const m2 = new TtftModel();
  for (const s of states(800, 7)) m2.observe('1:0', s, law(s, 3));
  assert.ok(m2.coefficients().perContextTokenStepSec > 2 * ENGINE.perContext);
  close(m2.addedStepSeconds('1:0', 100_000), m2.rankFactor('1:0') * m2.coefficients().perContextTokenStepSec * 100_000, 1e-9, 'the fit\'s');
});

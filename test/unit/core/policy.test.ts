import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CandidateRowView, DEFAULT_COST_SETTINGS, DEFAULT_POLICY_TYPE, PolicyRegistry, WorkerInputs, candidateRow,
  createDefaultPolicyFactory, defaultCostSettings, defaultPolicyFactory, policyInputs, runPolicy, selectionContext,
  type CandidateView, type WorkerSelectionPolicy,
} from '../../../src/core/select/policy.js';
import { defaultCosts, pickByCost, type Candidate } from '../../../src/core/select/selector.js';
import { SelectionError } from '../../../src/core/errors.js';
import { seededRng, type Rng } from '../../../src/core/random.js';

const seeded = (seed: number): Rng => seededRng(seed);
const PART = { modelName: 'model', routingGroup: 'default', blockSize: 16 };

function cand(o: Partial<Candidate> = {}): Candidate {
  return {
    workerId: 1n, dpRank: 0, taints: [], deviceBlocks: 0, hostExtBlocks: 0, diskExtBlocks: 0, sharedBeyondDeviceBlocks: 0,
    cachedTokens: 0, hasLoad: true, activePrefillTokens: 0, potentialDecodeBlocks: 0, activeRequests: 0, prefillPendingRequests: 0,
    totalKvBlocks: null, maxNumBatchedTokens: null, ...o,
  };
}
const views = (cs: Candidate[]): CandidateView[] => cs.map((c) => new CandidateRowView(c));
const ctx = (o: Partial<Parameters<typeof selectionContext>[0]> = {}) =>
  selectionContext({ promptTokens: 64, blockSize: 16, tracksPrefillTokens: true, modelName: 'model', routingGroup: 'default', ...o });
const three = views([cand({ workerId: 1n }), cand({ workerId: 2n }), cand({ workerId: 3n })]);
const argmin: WorkerSelectionPolicy['picker'] = {
  pick: (_c, rows) => rows.reduce((b, r, i) => (r.cost() < rows[b].cost() ? i : b), 0),
};
const isErr = (status: number, code: string, text?: RegExp) => (e: unknown) =>
  e instanceof SelectionError && e.status === status && e.code === code && (text === undefined || text.test(e.message));

test('filters, summed scorers and the picker compose; the index is into the input', () => {
  const seen: number[][] = [];
  const policy: WorkerSelectionPolicy = {
    filters: [{ keep: (_c, v) => v.worker().workerId !== 3n }, { keep: () => true }],
    scorers: [
      { score: (_c, cs, out) => { seen.push([...out]); cs.forEach((v, i) => { out[i] = 10 - Number(v.worker().workerId); }); } },
      { score: (_c, cs, out) => { seen.push([...out]); out[0] = 1; } },
    ],
    picker: argmin,
  };
  assert.equal(runPolicy(policy, ctx(), three, seeded(1)), 1); // worker 2: 8 vs worker 1: 9 + 1
  assert.deepEqual(seen, [[0, 0], [0, 0]]); // every scorer starts from zeros
  const dropFirst = { ...policy, filters: [{ keep: (_c: unknown, v: CandidateView) => v.worker().workerId !== 1n }] };
  assert.equal(runPolicy(dropFirst, ctx(), three, seeded(1)), 2); // worker 3 (cost 7), input row 2
});

test('picker rows expose the candidate and its summed cost', () => {
  let got: [bigint, number][] = [];
  const policy: WorkerSelectionPolicy = {
    filters: [],
    scorers: [{ score: (_c, _cs, out) => { out.set([1, 2, 3]); } }, { score: (_c, _cs, out) => { out.set([0.5, 0.5, 0.5]); } }],
    picker: { pick: (_c, rows) => { got = rows.map((r) => [r.candidate.worker().workerId, r.cost()]); return 2; } },
  };
  assert.equal(runPolicy(policy, ctx(), three, seeded(1)), 2);
  assert.deepEqual(got, [[1n, 1.5], [2n, 2.5], [3n, 3.5]]);
  // no scorers: every cost is 0
  assert.equal(runPolicy({ filters: [], scorers: [], picker: { pick: (_c, rows) => (rows.every((r) => r.cost() === 0) ? 0 : -1) } }, ctx(), three, seeded(1)), 0);
});

test('a non-finite cost is a 500 naming non-finite', () => {
  for (const bad of [NaN, Infinity, -Infinity]) {
    const policy: WorkerSelectionPolicy = { filters: [], scorers: [{ score: (_c, _cs, out) => { out[1] = bad; } }], picker: argmin };
    assert.throws(() => runPolicy(policy, ctx(), three, seeded(1)), isErr(500, 'SEL_POLICY_INTERNAL', /non-finite/));
  }
  // +Infinity and -Infinity from two scorers sum to NaN
  const two: WorkerSelectionPolicy = {
    filters: [], picker: argmin,
    scorers: [{ score: (_c, _cs, out) => { out[0] = Infinity; } }, { score: (_c, _cs, out) => { out[0] = -Infinity; } }],
  };
  assert.throws(() => runPolicy(two, ctx(), three, seeded(1)), /non-finite cost NaN for worker 1 \(dp_rank 0\)/);
});

test('a row outside [0, n) or not an integer is a 500 naming candidate row', () => {
  for (const row of [3, -1, 0.5, NaN, 99]) {
    const policy: WorkerSelectionPolicy = { filters: [], scorers: [], picker: { pick: () => row } };
    assert.throws(() => runPolicy(policy, ctx(), three, seeded(1)), isErr(500, 'SEL_POLICY_INTERNAL', /candidate row/));
  }
  // n is the number of kept candidates, not of inputs
  const filtered: WorkerSelectionPolicy = { filters: [{ keep: (_c, v) => v.worker().workerId === 1n }], scorers: [], picker: { pick: () => 1 } };
  assert.throws(() => runPolicy(filtered, ctx(), three, seeded(1)), /candidate row 1, but there are 1 candidates/);
});

test('a filter that rejects every candidate is a 503; no candidates at all is a 503', () => {
  const none: WorkerSelectionPolicy = { filters: [{ keep: () => false }], scorers: [], picker: argmin };
  assert.throws(() => runPolicy(none, ctx(), three, seeded(1)), isErr(503, 'SEL_ALL_FILTERED'));
  assert.throws(() => runPolicy(none, ctx(), [], seeded(1)), isErr(503, 'SEL_NO_ENDPOINTS'));
});

test('a component that throws becomes a 500 policy error; catalogue errors pass through', () => {
  const boom: WorkerSelectionPolicy = { filters: [], scorers: [{ score: () => { throw new Error('kaput'); } }], picker: argmin };
  assert.throws(() => runPolicy(boom, ctx(), three, seeded(1)), isErr(500, 'SEL_POLICY_INTERNAL', /scorer failed: kaput/));
  const own: WorkerSelectionPolicy = { filters: [], scorers: [], picker: { pick: () => { throw new SelectionError('SEL_OVERLOADED', 'busy'); } } };
  assert.throws(() => runPolicy(own, ctx(), three, seeded(1)), isErr(429, 'SEL_OVERLOADED'));
});

test('registry: builtins, create per partition with parameters, unknown and duplicate names', () => {
  const reg = PolicyRegistry.withBuiltins();
  assert.ok(reg.has(DEFAULT_POLICY_TYPE));
  const calls: unknown[] = [];
  const policy: WorkerSelectionPolicy = { filters: [], scorers: [], picker: argmin };
  assert.equal(reg.register('mine', (p, params) => { calls.push([p, params]); return policy; }), reg);
  assert.deepEqual(reg.names(), [DEFAULT_POLICY_TYPE, 'mine']);
  assert.equal(reg.create('mine', PART, { k: 1 }), policy);
  assert.deepEqual(calls, [[PART, { k: 1 }]]);
  assert.throws(() => reg.create('nope', PART, {}), /unknown worker selection policy type "nope"/);
  assert.throws(() => reg.register('mine', () => policy), /already registered/);
  assert.throws(() => reg.register(' ', () => policy), /must not be empty/);
  reg.register('broken', () => ({ filters: [] }) as unknown as WorkerSelectionPolicy);
  assert.throws(() => reg.create('broken', PART, {}), /"broken" returned a malformed policy/);
  assert.equal(new PolicyRegistry().has(DEFAULT_POLICY_TYPE), false);
});

const ROWS = [
  cand({ workerId: 1n, deviceBlocks: 4, activePrefillTokens: 64, potentialDecodeBlocks: 3 }),
  cand({ workerId: 2n, deviceBlocks: 0, potentialDecodeBlocks: 1 }),
  cand({ workerId: 3n, deviceBlocks: 2, hostExtBlocks: 2, activePrefillTokens: 16, potentialDecodeBlocks: 2, taints: ['fast'] }),
  cand({ workerId: 4n, hasLoad: false, deviceBlocks: 1 }),
];

test('dynamo-default-cost-fn matches defaultCosts + pickByCost', () => {
  const policy = defaultPolicyFactory(PART, {});
  const p = {
    blockSize: 16, islTokens: 64, trackPrefillTokens: true, ...DEFAULT_COST_SETTINGS, preferredTaints: {},
  };
  const costs = defaultCosts(ROWS, p);
  for (const temperature of [0, 0.7]) {
    for (let seed = 1; seed <= 20; seed++) {
      const want = pickByCost(costs, costs.length, temperature, seeded(seed));
      const got = runPolicy(policy, ctx({ routerOverride: { routerTemperature: temperature } }), views(ROWS), seeded(seed));
      assert.equal(got, want, `T=${temperature} seed=${seed}`);
    }
  }
});

test('dynamo-default-cost-fn: request overrides beat parameters, which beat the base settings', () => {
  let seenCosts: number[] = [];
  const wrap = (pol: WorkerSelectionPolicy): WorkerSelectionPolicy =>
    ({ ...pol, picker: { pick: (c, rows, r) => { seenCosts = rows.map((x) => x.cost()); return pol.picker.pick(c, rows, r); } } });
  const one = views([cand({ deviceBlocks: 2, potentialDecodeBlocks: 1 })]); // raw 4 blocks
  const run = (pol: WorkerSelectionPolicy, o = {}) => { runPolicy(wrap(pol), ctx(o), one, seeded(1)); return seenCosts[0]; };
  assert.equal(run(defaultPolicyFactory(PART, {})), 3);
  const half = createDefaultPolicyFactory({ ...DEFAULT_COST_SETTINGS, overlapScoreCredit: 0.5 })(PART, {});
  assert.equal(run(half), 4);
  const param = createDefaultPolicyFactory({ ...DEFAULT_COST_SETTINGS, overlapScoreCredit: 0.5 })(PART, { overlap_score_credit: 0, prefill_load_scale: 2 });
  assert.equal(run(param), 9);
  assert.equal(run(param, { routerOverride: { overlapScoreCredit: 1, prefillLoadScale: 1 } }), 3);
  assert.equal(run(defaultPolicyFactory(PART, {}), { tracksPrefillTokens: false }), 1);
  // preferred taints come from the context
  const tainted = views([cand({ deviceBlocks: 2, potentialDecodeBlocks: 1, taints: ['fast'] })]);
  runPolicy(wrap(defaultPolicyFactory(PART, {})), ctx({ preferredTaints: { fast: 100 } }), tainted, seeded(1));
  assert.ok(Math.abs(seenCosts[0] - 3 * Math.exp(-1)) < 1e-9);
});

test('dynamo-default-cost-fn parameters are validated by name and range', () => {
  assert.deepEqual(defaultCostSettings(DEFAULT_COST_SETTINGS, { host_cache_hit_weight: 0.5, router_temperature: 2 }),
    { ...DEFAULT_COST_SETTINGS, hostCacheHitWeight: 0.5, routerTemperature: 2 });
  assert.throws(() => defaultPolicyFactory(PART, { bogus: 1 }), /unknown parameter "bogus"/);
  assert.throws(() => defaultPolicyFactory(PART, { host_cache_hit_weight: 1.5 }), /"host_cache_hit_weight" must be/);
  assert.throws(() => defaultPolicyFactory(PART, { overlap_score_credit: -1 }), /"overlap_score_credit" must be/);
  assert.throws(() => defaultPolicyFactory(PART, { prefill_load_scale: '1' }), /"prefill_load_scale" must be/);
});

test('candidate views: row adapter, conversion of a foreign view, declared inputs', () => {
  const row = cand({ workerId: 7n, dpRank: 2, hostExtBlocks: 1, hasLoad: false, activePrefillTokens: 5, potentialDecodeBlocks: 6, activeRequests: 2, prefillPendingRequests: 1 });
  const v = new CandidateRowView(row);
  assert.equal(candidateRow(v), row);
  assert.equal(v.hasTierMatches(), true);
  assert.deepEqual([v.isAvailable(), v.activePrefillTokens(), v.decodeCostBlocks(), v.activeRequests(), v.prefillPendingRequests()], [false, 0, 0, 0, 0]);
  const foreign: CandidateView = {
    worker: () => ({ workerId: 9n, dpRank: 1, taints: ['t'] }), deviceOverlapBlocks: () => 1, hostOverlapBlocks: () => 2,
    diskOverlapBlocks: () => 3, accountingCacheEstimate: () => 40, hasTierMatches: () => true, sharedHits: () => 4,
    isAvailable: () => true, activePrefillTokens: () => 5, decodeCostBlocks: () => 6, activeRequests: () => 7, totalKvBlocks: () => 100,
    prefillPendingRequests: () => 2, maxNumBatchedTokens: () => null, contextTokens: () => 900, activeOverlapBlocks: () => 3, maxNumSeqs: () => 64, busyFraction: () => 0.25, pendingSeconds: () => 0.5,
  };
  assert.deepEqual(candidateRow(foreign), {
    workerId: 9n, dpRank: 1, taints: ['t'], deviceBlocks: 1, hostExtBlocks: 2, diskExtBlocks: 3, sharedBeyondDeviceBlocks: 4,
    cachedTokens: 40, hasLoad: true, activePrefillTokens: 5, potentialDecodeBlocks: 6, activeRequests: 7, prefillPendingRequests: 2, totalKvBlocks: 100,
    maxNumBatchedTokens: null, contextTokens: 900, activeOverlapBlocks: 3, maxNumSeqs: 64, busyFraction: 0.25, pendingSecs: 0.5,
  });
  const all = WorkerInputs.CACHE | WorkerInputs.LOAD | WorkerInputs.PREFERRED_TAINT;
  assert.equal(policyInputs(defaultPolicyFactory(PART, {})), all);
  assert.equal(policyInputs({
    filters: [{ keep: () => true, requiredWorkerInputs: () => WorkerInputs.LOAD }], scorers: [],
    picker: { ...argmin, requiredWorkerInputs: () => WorkerInputs.NONE },
  }), WorkerInputs.LOAD);
});

test('selectionContext: accessors and defaults', () => {
  const c = ctx({ sessionId: 'legacy', routerOverride: { routerTemperature: 0.3 }, promptTokens: 65 });
  assert.equal(c.requestBlocks(), 5);
  assert.equal(c.sessionId(), 'legacy');
  assert.equal(c.routerTemperatureOverride(), 0.3);
  assert.deepEqual([c.priorityJump(), c.strictPriority(), c.isPathPlanning(), c.modelName(), c.routingGroup()], [0, 0, false, 'model', 'default']);
  assert.equal(ctx({ sessionId: 'legacy', sessionContext: { session_id: 'new', parent_session_id: undefined, session_final: undefined, input_trigger: undefined } }).sessionId(), 'new');
  assert.equal(ctx().routerTemperatureOverride(), undefined);
});

/**
 * Fleets by name (the mixed fleet's two profiles, each worker registered with its own KV budget
 * and step budget) and load as a fraction of the measured saturation throughput.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionCore } from '../../../src/core/core.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { fleetConfig, namedFleet, registerFleet, workerParams } from '../../../src/sim/fleet.js';
import { perfProfile } from '../../../src/sim/perf-model.js';
import { arrivalRate, measureSaturation } from '../../../src/sim/saturation.js';
import { simulate } from '../../../src/sim/simulate.js';
import { sweep } from '../../../src/sim/sweep.js';
import { generateWorkload } from '../../../src/sim/workload/spec.js';

/** The workers a fleet registers, as the core lists them. */
function registered(fleet: ReturnType<typeof fleetConfig>) {
  const core = SelectionCore.newLocal(parseRouterConfig({}, { useKvEvents: true }));
  try {
    registerFleet(core, fleet);
    return core.listWorkers().map((w) => ({ id: Number(w.worker_id), kv: w.total_kv_blocks, batched: w.max_num_batched_tokens, dp: w.data_parallel_size }))
      .sort((a, b) => a.id - b.id);
  } finally {
    void core.shutdown();
    for (const p of core.partitionList()) p.destroy();
  }
}

test('fleet names: WxR, and mixed = 4 H100 + 4 A100 workers, each registered with its own budgets', () => {
  assert.deepEqual(namedFleet('16x2'), { workers: 16, dpRanks: 2 });
  assert.throws(() => namedFleet('7y2'), /unknown fleet "7y2": WORKERSxRANKS/);
  assert.throws(() => namedFleet('0x1'), /unknown fleet/);
  const mixed = fleetConfig(namedFleet('mixed'));
  const params = workerParams(mixed);
  assert.equal(params.length, 8);
  assert.deepEqual(params.map((p) => p.cost), [
    ...Array(4).fill(perfProfile('llama3.1-8b-h100').cost), ...Array(4).fill(perfProfile('llama3.1-8b-a100').cost)]);
  assert.deepEqual(registered(mixed).map((w) => [w.kv, w.batched]), Array(8).fill([1024, 16_384]));
  // budgets per kind: each worker registers its own total_kv_blocks and max_num_batched_tokens
  const kinds = fleetConfig({
    workers: 3, dpRanks: 2,
    kinds: [{ workers: 1, profile: 'llama3.1-8b-h100', capacityBlocks: 2048 }, { workers: 2, profile: 'llama3.1-8b-a100', maxBatchedTokens: 8192 }],
  });
  assert.deepEqual(registered(kinds), [
    { id: 1, kv: 2048, batched: 16_384, dp: 2 }, { id: 2, kv: 1024, batched: 8192, dp: 2 }, { id: 3, kv: 1024, batched: 8192, dp: 2 }]);
  assert.throws(() => fleetConfig({ workers: 4, kinds: [{ workers: 3, profile: 'llama3.1-8b-h100' }] }), /kinds must add up to the fleet's 4 workers/);
  assert.throws(() => fleetConfig({ workers: 1, kinds: [{ workers: 1, profile: 'gpt' }] }), /kinds\[0\]: unknown profile "gpt"/);
});

test('the mixed fleet runs both profiles: its saturation lies between an all-A100 and an all-H100 fleet', async () => {
  const trace = generateWorkload('no_reuse:requests=1200', { seed: 1 });
  const sat = async (f: object): Promise<number> => (await measureSaturation(trace, f, { seed: 1 })).requests_per_s;
  const [h100, a100, mixed] = [await sat({}), await sat({ profile: 'llama3.1-8b-a100' }), await sat(namedFleet('mixed'))];
  assert.ok(a100 < mixed && mixed < h100, `A100 ${a100} < mixed ${mixed} < H100 ${h100} req/s`);
});

test('--load: the speed gives an arrival rate of load x the saturation, measured once per trace and fleet', async () => {
  const trace = generateWorkload('no_reuse:requests=1000:rate=30', { seed: 2 });
  const fleet = { workers: 2 };
  const o = { fleet, policies: 'kv', seed: 2 };
  const lo = await simulate(trace, { ...o, load: 0.5 });
  const s = lo.saturation!;
  assert.equal(lo.load, 0.5);
  assert.ok(s.saturated && s.passes.length >= 2, JSON.stringify(s.passes));
  // the saturation is the throughput of a pass that fell behind, with a pass that kept up within 1.2x below it
  const behind = s.passes.filter((p) => p.completed_rps < 0.9 * p.arrival_rps);
  assert.ok(behind.some((p) => p.completed_rps === s.requests_per_s));
  assert.equal(s.base_rps, arrivalRate(trace));
  assert.ok(Math.abs(lo.speed * arrivalRate(trace) - 0.5 * s.requests_per_s) < 1e-9 * s.requests_per_s, 'arrival rate = load x saturation');
  const hi = await simulate(trace, { ...o, load: 1.5 });
  assert.equal(hi.saturation, s, 'measured once (cached on the trace)');
  assert.notEqual((await simulate(trace, { ...o, fleet: { workers: 3 }, load: 0.5 })).saturation, s, 'another fleet measures again');
  // below saturation the fleet keeps up; past it, requests queue
  assert.ok(lo.policies[0].queue_wait_ms.p90 < 100, `load 0.5: wait p90 ${lo.policies[0].queue_wait_ms.p90} ms`);
  assert.ok(hi.policies[0].queue_wait_ms.p90 > 10 * Math.max(1, lo.policies[0].queue_wait_ms.p90), `load 1.5: wait p90 ${hi.policies[0].queue_wait_ms.p90} ms`);
  const given = await simulate(trace, { ...o, load: 0.5, saturation: 20 });
  assert.deepEqual(given.saturation?.passes, []);
  assert.equal(given.speed, (0.5 * 20) / arrivalRate(trace));
  await assert.rejects(simulate(trace, { ...o, load: 0 }), /load must be a positive number/);
});

test('a short trace whose first pass completes nothing in its window: the next pass halves the rate (it measured 0 req/s and failed)', async () => {
  // 100 requests on 8 ranks: at 1.5x the rough capacity they arrive in less time than one takes
  const trace = generateWorkload('no_reuse:requests=100', { seed: 0 });
  const s = await measureSaturation(trace, { workers: 8 });
  assert.equal(s.passes[0].completed_rps, 0, JSON.stringify(s.passes));
  assert.ok(Math.abs(s.passes[1].arrival_rps / s.passes[0].arrival_rps - 0.5) < 0.1, JSON.stringify(s.passes));
  assert.ok(s.passes.every((p) => p.arrival_rps > 0) && s.requests_per_s > 0, JSON.stringify(s));
  const r = await simulate(trace, { fleet: { workers: 8 }, policies: 'kv', load: 0.6 });
  assert.equal(r.policies[0].requests, 100);
  // two requests never complete inside a window: said, not a speed of 0
  await assert.rejects(measureSaturation(generateWorkload('no_reuse:requests=2', { seed: 0 }), { workers: 8 }), /too short to measure a saturation \(2 requests/);
});

test('a sweep of load runs every policy at each load against one measured saturation', async () => {
  const trace = generateWorkload('system_prompt:requests=600:rate=40', { seed: 3 });
  const r = await sweep(trace, { fleet: { workers: 2 }, policies: 'kv,round_robin', seed: 3 }, 'load', [0.4, 0.8]);
  assert.deepEqual(r.runs.map((run) => run.load), [0.4, 0.8]);
  assert.equal(r.runs[0].saturation, r.runs[1].saturation);
  assert.ok(Math.abs(r.runs[1].speed / r.runs[0].speed - 2) < 1e-9);
  for (const run of r.runs) assert.deepEqual(run.policies.map((p) => p.requests), [600, 600]);
});

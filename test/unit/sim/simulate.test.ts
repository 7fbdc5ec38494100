/**
 * The simulator end to end on the Mooncake conversation trace, through the real SelectionCore
 * and wasm index: the sanity pins of issue 8, determinism, and every policy kind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulate } from '../../../src/sim/simulate.js';
import { parsePolicies } from '../../../src/sim/policies.js';
import { compileScorer } from '../../../src/sim/custom-scorer.js';
import type { WorkerScorer } from '../../../src/core/select/policy.js';
import { namedFleet } from '../../../src/sim/fleet.js';
import { conversationTrace, traceText } from './sim-helpers.js';

/** Prefix reuse computed from the trace text alone: blocks whose whole prefix was seen before. */
function tracePrefixReuse(text: string): { reused: number; total: number } {
  const seen = new Set<number>();
  let reused = 0, total = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const ids = (JSON.parse(line) as { hash_ids: number[] }).hash_ids;
    let k = 0;
    while (k < ids.length && seen.has(ids[k])) k++;
    reused += k;
    total += ids.length;
    for (const h of ids) seen.add(h);
  }
  return { reused, total };
}

test('one worker with unbounded capacity hits exactly the trace\'s own prefix reuse', async () => {
  const { reused, total } = tracePrefixReuse(traceText());
  assert.equal(total, 288500);
  // an engine fast enough that the single worker never builds an hour-long queue
  const res = await simulate(conversationTrace(), {
    fleet: { workers: 1, capacityBlocks: Infinity, stepCost: { prefillTokenMs: 1e-4, decodeKvTokenMs: 0 } }, policies: 'kv', seed: 1,
  });
  const [kv] = res.policies;
  assert.equal(kv.requests, 12031);
  assert.equal(kv.blocks, total);
  assert.equal(kv.cached_blocks, reused);
  assert.equal(kv.block_hit_rate, reused / total);
  assert.equal(kv.evicted_blocks, 0);
  assert.equal(kv.index_mismatches, 0);
});

test('8 workers, bounded capacity: the KV-aware default beats round robin and random', async () => {
  const res = await simulate(conversationTrace(), { fleet: { workers: 8, capacityBlocks: 1024 }, policies: 'kv,round_robin,random', seed: 1 });
  const [kv, rr, rnd] = res.policies;
  assert.ok(kv.evicted_blocks > 0, 'capacity is binding');
  assert.ok(kv.hit_rate > rr.hit_rate, `kv ${kv.hit_rate} > round_robin ${rr.hit_rate}`);
  assert.ok(kv.hit_rate > rnd.hit_rate, `kv ${kv.hit_rate} > random ${rnd.hit_rate}`);
  for (const p of res.policies) {
    assert.equal(p.requests, 12031);
    assert.equal(p.index_mismatches, 0, `${p.policy}: the index agrees with the engines`);
    assert.ok(p.ttft_ms.p50 <= p.ttft_ms.p90 && p.ttft_ms.p90 <= p.ttft_ms.p99);
    assert.ok(p.e2e_ms.p50 >= p.ttft_ms.p50);
    assert.ok(p.load_imbalance.mean >= 1);
  }
  // round robin spreads requests evenly over the ranks
  const counts = rr.per_rank.map((r) => r.requests);
  assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, String(counts));
});

test('deterministic for a seed', async () => {
  const trace = conversationTrace(1500);
  const o = { fleet: { workers: 4, capacityBlocks: 256 }, policies: 'kv:router_temperature=0.5,random', seed: 42 };
  const strip = (r: Awaited<ReturnType<typeof simulate>>) => JSON.stringify(r.policies.map(({ wall_ms: _w, ...m }) => m));
  const a = strip(await simulate(trace, o));
  assert.equal(strip(await simulate(trace, o)), a);
  assert.notEqual(strip(await simulate(trace, { ...o, seed: 43 })), a);
});

test('every policy kind runs on dp ranks and smaller blocks, through the custom-policy API', async () => {
  const trace = conversationTrace(800);
  const scorer = compileScorer('for (let i = 0; i < cands.length; i++) out[i] = cands[i].worker().workerId === 2n ? 0 : 1;');
  const res = await simulate(trace, {
    fleet: { workers: 3, dpRanks: 2, blockSize: 128, capacityBlocks: 2048 }, seed: 3, scorer,
    policies: 'kv,round_robin,random,least_loaded,session_affinity:ttl_secs=600,custom',
  });
  const by = new Map(res.policies.map((p) => [p.policy, p]));
  assert.equal(by.size, 6);
  for (const p of res.policies) {
    assert.equal(p.requests, 800);
    assert.equal(p.per_rank.length, 6);
    assert.equal(p.index_mismatches, 0);
    assert.ok(p.hit_rate > 0 && p.hit_rate < 1, `${p.policy} hit rate ${p.hit_rate}`);
  }
  // the user scorer sent everything to worker 2 (both of its ranks)
  const custom = by.get('custom')!;
  assert.deepEqual(custom.per_rank.filter((r) => r.requests > 0).map((r) => r.worker_id), [2, 2]);
  assert.ok(by.get('session_affinity:ttl_secs=600')!.hit_rate > by.get('random')!.hit_rate);
});

test('per rank: TTFT percentiles of the requests prefilled there; on two GPU kinds the slower kind\'s are longer', async () => {
  const res = await simulate(conversationTrace(600), { fleet: namedFleet('mixed'), seed: 2, policies: 'round_robin' });
  const p = res.policies[0];
  assert.equal(p.per_rank.length, 8);
  let weighted = 0;
  for (const r of p.per_rank) {
    assert.ok(r.requests > 0 && r.ttft_ms.p50 > 0 && r.ttft_ms.p50 <= r.ttft_ms.p90 && r.ttft_ms.p90 <= r.ttft_ms.p99, JSON.stringify(r));
    weighted += r.ttft_ms.mean * r.requests;
  }
  // every request counted once, on the rank that prefilled it
  assert.ok(Math.abs(weighted / p.requests - p.ttft_ms.mean) < 1e-6 * p.ttft_ms.mean, `${weighted / p.requests} vs ${p.ttft_ms.mean}`);
  // round robin gives both kinds the same traffic: workers 5-8 (A100) take longer than 1-4 (H100)
  const median = (ws: number[]): number => {
    const v = p.per_rank.filter((r) => ws.includes(r.worker_id)).map((r) => r.ttft_ms.p50).sort((a, b) => a - b);
    return (v[1] + v[2]) / 2;
  };
  assert.ok(median([5, 6, 7, 8]) > 1.5 * median([1, 2, 3, 4]), `A100 ${median([5, 6, 7, 8])} ms, H100 ${median([1, 2, 3, 4])} ms`);
});

test('the simulated clients send each request\'s output length as expected_output_tokens, or with expectedOutput none nothing', async () => {
  const trace = conversationTrace(200);
  const seen = async (expectedOutput?: 'trace' | 'none'): Promise<(number | undefined)[]> => {
    const got: (number | undefined)[] = [];
    const scorer: WorkerScorer = { score: (ctx) => { got.push(ctx.expectedOutputTokens()); } };
    await simulate(trace, { fleet: { workers: 2 }, policies: 'custom', scorer, expectedOutput });
    return got;
  };
  const lengths = Array.from(trace.outputLength);
  // one scoring per request, in arrival order (no admission queue)
  assert.deepEqual(await seen(), lengths);
  assert.deepEqual(await seen('trace'), lengths);
  assert.deepEqual(await seen('none'), lengths.map(() => undefined));
});

test('policy lists: parameters and errors', () => {
  const [a, b] = parsePolicies('kv:overlap_score_credit=0.5:prefill_load_scale=2, least_loaded');
  assert.deepEqual(a, { label: 'kv:overlap_score_credit=0.5:prefill_load_scale=2', kind: 'kv', params: { overlap_score_credit: 0.5, prefill_load_scale: 2 } });
  assert.equal(b.kind, 'least_loaded');
  assert.throws(() => parsePolicies('kv,nope'), /unknown policy "nope"/);
  assert.throws(() => parsePolicies('kv:credit=1'), /bad parameter "credit=1"/);
  assert.throws(() => parsePolicies('kv,kv'), /listed twice/);
  assert.throws(() => parsePolicies(''), /no policies/);
});

test('the speed factor compresses arrivals: same requests, shorter makespan, more load', async () => {
  const trace = conversationTrace(1000);
  const o = { fleet: { workers: 4 }, policies: 'round_robin', seed: 1 };
  const [x1] = (await simulate(trace, o)).policies;
  const [x4] = (await simulate(trace, { ...o, speed: 4 })).policies;
  assert.equal(x4.requests, x1.requests);
  // arrivals span a quarter of the time; 4 workers then queue, so the makespan shrinks less
  assert.ok(x4.makespan_s < 0.75 * x1.makespan_s, `${x4.makespan_s} s at x4 vs ${x1.makespan_s} s at x1`);
  assert.ok(x4.throughput.requests_per_s > 1.3 * x1.throughput.requests_per_s);
  assert.ok(x4.queue_wait_ms.p99 > x1.queue_wait_ms.p99, 'a denser arrival stream waits longer');
  assert.ok(x4.series.t_s.at(-1)! < x1.series.t_s.at(-1)!);
});

test('with a router queue threshold, requests wait in the core\'s admission queue and all complete', async () => {
  const trace = conversationTrace(1500);
  const o = { fleet: { workers: 2 }, policies: 'kv', seed: 1, speed: 3 };
  const [open] = (await simulate(trace, o)).policies;
  assert.equal(open.router_wait_ms.p99, 0);
  const [queued] = (await simulate(trace, { ...o, queue: { threshold: 0.5, policy: 'wspt' } })).policies;
  assert.equal(queued.requests, 1500);
  assert.equal(queued.index_mismatches, 0);
  assert.ok(queued.router_wait_ms.p99 > 0, 'some selections waited for a rank to drop below 8,192 active prefill tokens');
  assert.ok(queued.queue_wait_ms.p99 >= queued.router_wait_ms.p99);
});

test('a router queue threshold of 0 is queueing too (every rank with prefill in flight is busy)', async () => {
  const trace = conversationTrace(400);
  const [queued] = (await simulate(trace, { fleet: { workers: 2 }, policies: 'kv', seed: 1, speed: 3, queue: { threshold: 0 } })).policies;
  assert.equal(queued.requests, 400);
  assert.ok(queued.router_wait_ms.p99 > 0);
});

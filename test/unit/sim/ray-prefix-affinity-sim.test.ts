/**
 * The simulator runs `ray_prefix_affinity` (the same policy the service runs) on the Mooncake
 * conversation trace: every request completes, the index agrees with the engines, and routing
 * by the prompts it routed keeps more of the cache than random routing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulate } from '../../../src/sim/simulate.js';
import { conversationTrace } from './sim-helpers.js';

test('simulate --policies ray_prefix_affinity, with and without its options, completes the trace', async () => {
  const policies = 'ray_prefix_affinity,ray_prefix_affinity:imbalanced_threshold=4:do_eviction=1:eviction_threshold_tokens=200000,random';
  const res = await simulate(conversationTrace(1500), { fleet: { workers: 4, capacityBlocks: 512 }, policies, seed: 1 });
  const [ray, capped, rnd] = res.policies;
  for (const p of res.policies) {
    assert.equal(p.requests, 1500, p.policy);
    assert.equal(p.index_mismatches, 0, `${p.policy}: the index agrees with the engines`);
  }
  assert.ok(ray.hit_rate > rnd.hit_rate, `ray_prefix_affinity ${ray.hit_rate} > random ${rnd.hit_rate}`);
  assert.ok(capped.hit_rate > rnd.hit_rate, `${capped.policy} ${capped.hit_rate} > random ${rnd.hit_rate}`);
});

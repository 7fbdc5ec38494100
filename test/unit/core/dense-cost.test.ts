/**
 * The dense cost pass (src/core/select/dense-cost.ts) against the object form it reproduces
 * (`defaultCosts` over the candidate rows, src/core/select/selector.ts): bit for bit, on random
 * partitions with live bookings, decayed output blocks, a host tier, taints and overrides, and
 * with both the unmatched-rank fast path (every rank eligible) and the full loop.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionCore } from '../../../src/core/core.js';
import { seededRng } from '../../../src/core/random.js';
import { parseRouterConfig, type EffectiveRouterValues, type RouterConfig } from '../../../src/core/config/config.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { blockHashes } from '../../../src/core/index/hashing.js';
import { SelectRequestSchema, type SelectAndReserveRequest } from '../../../src/core/wire/schemas.js';
import { denseCosts } from '../../../src/core/select/dense-cost.js';
import { costParams, defaultCosts, type Candidate } from '../../../src/core/select/selector.js';
import type { Partition } from '../../../src/core/catalog/partition.js';
import type { NormalizedPrompt } from '../../../src/core/index/prompt.js';
import type { RankView, SelectScratch } from '../../../src/core/select/rank-view.js';

/** The core's internals this test drives (private in the type, reachable at run time). */
interface Internals {
  config: RouterConfig;
  parse(schema: unknown, input: unknown): unknown;
  open(req: unknown): { req: SelectAndReserveRequest; eff: EffectiveRouterValues; prompt: NormalizedPrompt };
  sched: {
    candidates(part: Partition, prompt: NormalizedPrompt, eff: EffectiveRouterValues): Candidate[];
    pass<T>(part: Partition, req: SelectAndReserveRequest | null, prompt: NormalizedPrompt, eff: EffectiveRouterValues,
      cache: undefined, steer: undefined, f: (view: RankView, S: SelectScratch) => T): T;
  };
}

test('dense costs equal defaultCosts over the candidate rows, bit for bit, on random partitions', async () => {
  let checked = 0;
  for (let round = 0; round < 6; round++) {
    const rng = seededRng(100 + round);
    const r = (): number => rng.next();
    const bs = [16, 7, 32][round % 3];
    const core = SelectionCore.newLocal(parseRouterConfig({}), { rng: seededRng(round) });
    const W = 20 + Math.floor(r() * 40);
    const convs = Array.from({ length: 3 }, () => Array.from({ length: 30 * bs }, () => Math.floor(r() * 50_000)));
    for (let w = 1; w <= W; w++) {
      core.upsertWorker({ worker_id: w, model_name: 'm', endpoint: `http://w${w}`, block_size: bs, kv_events_endpoint: `tcp://127.0.0.1:${20000 + w}`,
        data_parallel_size: 1 + (w % 2), taints: w % 3 ? ['a'] : ['b'] });
    }
    const part = core.partition('m', 'default') as Partition;
    for (let w = 1; w <= W; w++) {
      const locals = blockHashes(convs[w % 3].slice(0, Math.floor(r() * convs[0].length)), bs);
      part.index.stored(BigInt(w), 0, Tier.Device, null, locals.map((l, i) => ({ ext: BigInt(w) * 1_000_000n + BigInt(i), local: l })));
      if (w % 4 === 0) part.index.stored(BigInt(w), 1, Tier.Host, null, locals.slice(0, 5).map((l, i) => ({ ext: BigInt(w) * 2_000_000n + BigInt(i), local: l })));
    }
    const prompt = (i: number): number[] => [...convs[i % 3].slice(0, Math.floor(r() * convs[0].length)),
      ...Array.from({ length: Math.floor(r() * 3 * bs) }, () => Math.floor(r() * 50_000))];
    for (let i = 0; i < 20; i++) {
      await core.selectAndReserve({ model_name: 'm', selection_id: `b${i}`, token_ids: prompt(i), expected_output_tokens: 64 });
      if (i % 3 === 0) core.prefillComplete(`b${i}`);
      if (i % 2 === 0) for (let k = 0; k < 3; k++) core.addOutputBlock(`b${i}`, { decay_fraction: r() });
    }
    const c = core as unknown as Internals;
    for (let q = 0; q < 30; q++) {
      const override = q % 4 === 0 ? {} : { prefill_load_scale: r() * 3, overlap_score_credit: r() * 2, track_prefill_tokens: q % 5 !== 0, shared_cache_multiplier: r() };
      const body = { model_name: 'm', token_ids: prompt(q), router_config_override: override,
        ...(q % 6 === 0 ? { routing_constraints: { preferred_taints: { a: r() } } } : {}),
        ...(q % 7 === 0 ? { allowed_worker_ids: [1, 2, 3, 5, 8, 13] } : {}) };
      const { req, eff, prompt: p } = c.open(c.parse(SelectRequestSchema, body));
      const params = costParams(c.config, eff, { blockSize: part.blockSize, islTokens: p.isl, preferredTaints: req.routing_constraints.preferred_taints });
      const allowed = req.allowed_worker_ids ? new Set(req.allowed_worker_ids) : null;
      const cands = c.sched.candidates(part, p, eff).filter((x) => allowed === null || allowed.has(x.workerId));
      const ref = Array.from(defaultCosts(cands, params));
      const dense = c.sched.pass(part, req, p, eff, undefined, undefined,
        (view, S) => Array.from(denseCosts(S, view, part.loads, params, p.nBlocks).subarray(0, S.nKept)));
      assert.equal(dense.length, ref.length);
      for (let i = 0; i < ref.length; i++) assert.ok(Object.is(dense[i], ref[i]), `round ${round} query ${q} row ${i}: ${dense[i]} != ${ref[i]}`);
      checked++;
    }
  }
  assert.equal(checked, 180);
});

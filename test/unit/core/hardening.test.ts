/**
 * Issue 15 in the core: one regression test per defect the core owns (1, 2, 3, 5, 9), and the
 * wire details settled against Dynamo's source. Every rejection is checked to change nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCore, rejects, worker } from './core-helpers.js';
import { show } from '../../../src/core/wire/show.js';
import { stringifyJson } from '../../../src/core/wire/json.js';
import type { SelectionCore } from '../../../src/core/core.js';

/** Everything a client can read back: the catalog, the loads and the index. */
const snapshot = (core: SelectionCore): string => stringifyJson([core.listWorkers(), core.loads(), core.dump()]);

/** `depth` nested arrays around `inner`. */
const nested = (depth: number, inner: unknown = 1): unknown => {
  let v = inner;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};

const TOKENS = Array.from({ length: 16 }, (_, i) => i + 1);

test('defect 1: a wrong-typed value is a 422 that quotes it briefly, never a 500', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const before = snapshot(core);
  const cases: [string, () => unknown][] = [
    ['u64 holding a bigint array', () => core.upsertWorker({ worker_id: [18446744073709551616n] })],
    ['u64 holding deep nesting', () => core.upsertWorker({ worker_id: nested(100_000) })],
    ['u32 holding a nested bigint', () => core.upsertWorker(worker(2, { block_size: [[1n << 70n]] }))],
    ['count holding deep nesting', () => core.upsertWorker(worker(2, { max_num_batched_tokens: nested(50_000, 2n ** 80n) }))],
    ['float holding an object', () => core.upsertWorker(worker(2, { kv_transfer_preferred_weight: { a: [1n, { b: nested(1000) }] } }))],
    ['token id holding deep nesting', () => core.select({ model_name: 'model', token_ids: [1, nested(100_000)] })],
    ['router override holding deep nesting', () => core.select({ model_name: 'model', token_ids: TOKENS, router_config_override: { overlap_score_credit: nested(200_000) } })],
    ['hash holding a huge array', () => core.select({ model_name: 'model', block_hashes: [Array(1_000_000).fill(7n)], sequence_hashes: [1], isl_tokens: 4 })],
    ['u64 id list holding a long string', () => core.select({ model_name: 'model', token_ids: TOKENS, allowed_worker_ids: ['x'.repeat(100_000)] })],
  ];
  for (const [what, call] of cases) {
    const err = await rejects(call, 422);
    assert.ok(err.message.length < 400, `${what}: a short message (${err.message.length} chars)`);
    assert.match(err.message, /got /, what);
  }
  assert.equal(snapshot(core), before, 'nothing changed');
});

test('defect 1: show() quotes any value briefly and never throws', () => {
  assert.equal(show(5n), '5');
  assert.equal(show([1n, [2n]]), '[1,[2]]');
  assert.equal(show({ a: 'x', b: null }), '{"a":"x","b":null}');
  assert.equal(show(nested(3)), '[[[…]]]');
  for (const v of [nested(1_000_000), Array(1_000_000).fill(18446744073709551616n), 'y'.repeat(1_000_000),
    Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))]) {
    const s = show(v);
    assert.ok(s.length <= 65, `bounded: ${s.length}`);
  }
  assert.ok(show('x'.repeat(1000)).endsWith('…'));
});

/** kv_hint on bookings (Dynamo `lib/kv-router/src/services/selection/core/hint.rs`, `lib/kv-router/src/services/selection/core/tests.rs`): sources, longest prefix, and where hints never appear. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCore, worker } from './core-helpers.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { blockHashes } from '../../../src/core/index/hashing.js';

const tokens = Array.from({ length: 12 }, (_, i) => i + 1);
const hw = (id: number, extra: Record<string, unknown> = {}) => worker(id, {
  kv_events_endpoint: `tcp://127.0.0.1:${5000 + id}`, router_hint_worker_type: 'decode',
  router_hint_source_control_endpoints: { 0: `tcp://worker-${id}:7000` }, ...extra,
});

function setup(env: Record<string, string> = {}, w1: Record<string, unknown> = {}) {
  const { core } = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true', ...env });
  core.upsertWorker(hw(1, w1));
  core.upsertWorker(hw(2));
  const locals = blockHashes(tokens, 4);
  core.partition('model', 'default')!.index.stored(1n, 0, Tier.Device, null, [
    { ext: (1n << 64n) - 1n, local: locals[0] }, { ext: 1n << 63n, local: locals[1] }]);
  return core;
}

test('a booking pinned away from the holder gets a hint with the holder\'s endpoint and engine hashes', async () => {
  const core = setup();
  const res = await core.selectAndReserve({ model_name: 'model', selection_id: 'h', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.deepEqual(res.kv_hint, {
    protocol_version: '0.1', message_id: 'h',
    actions: [{ action_id: 'a1', action_type: 'kv.fetch', action_version: '1.0',
      payload: { source_control_endpoint: 'tcp://worker-1:7000', block_hashes: [(1n << 64n) - 1n, 1n << 63n] } }],
  });
});

test('no hint when pinned to the holder, on a query select, without capable workers, for state_agent_v2 sources', async () => {
  const core = setup();
  const own = await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: tokens, pinned_worker: { worker_id: 1, dp_rank: 0 } });
  assert.ok(!('kv_hint' in own));
  const q = await core.select({ model_name: 'model', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.ok(!('kv_hint' in q));
  const v2 = setup({}, { kv_event_source_mode: 'state_agent_v2' });
  const r2 = await v2.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.ok(!('kv_hint' in r2));
  const other = setup({}, { router_hint_worker_type: 'prefill' });
  const r3 = await other.selectAndReserve({ model_name: 'model', selection_id: 'c', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.ok(!('kv_hint' in r3), 'different hint type');
});

test('no hint with a predicted side index or without KV events', async () => {
  const pred = setup({ DYN_ROUTER_PREDICTED_TTL_SECS: '30' });
  const r = await pred.selectAndReserve({ model_name: 'model', selection_id: 'p', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.ok(!('kv_hint' in r));
  const { core } = makeCore();
  core.upsertWorker(hw(1));
  core.upsertWorker(hw(2));
  const r2 = await core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.ok(!('kv_hint' in r2));
});

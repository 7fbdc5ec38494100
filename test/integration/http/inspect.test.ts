/**
 * Inspection routes over a real server (Dynamo `lib/kv-router/src/services/selection/core/queries.rs`, `lib/kv-router/src/services/indexer/server.rs`): overlap score rows for every
 * schedulable worker rank, loads with filters, potential loads, and the dump format.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks } from './server.js';

test('overlap_scores lists every schedulable rank: (1,0),(2,2),(2,3) with zero tiers and no shared cache', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.worker(2, { data_parallel_start_rank: 2, data_parallel_size: 2 });
  await s.call('POST', '/workers', { worker_id: 3, model_name: 'model', block_size: 4 }); // incomplete: no row
  const r = await s.call('POST', '/overlap_scores', { model_name: 'model', token_ids: toks(4) });
  assert.equal(r.status, 200);
  assert.equal(r.body.block_size, 4);
  assert.equal(r.body.num_blocks, 1);
  assert.deepEqual(r.body.workers.map((w: { worker_id: number; dp_rank: number }) => [w.worker_id, w.dp_rank]), [[1, 0], [2, 2], [2, 3]]);
  for (const w of r.body.workers) {
    assert.deepEqual([w.device_blocks, w.host_pinned_blocks, w.disk_blocks, w.host_pinned_extension_blocks, w.disk_extension_blocks,
      w.router_credit_blocks], [0, 0, 0, 0, 0, 0]);
  }
  assert.equal(r.body.shared_cache.enabled, false);
  const sel = await s.call('POST', '/select', { model_name: 'model', token_ids: toks(4), pinned_worker: { worker_id: 2, dp_rank: 3 } });
  assert.deepEqual(sel.body.overlap.dp, { 2: 0, 3: 0 }, 'one dp entry per rank of the chosen worker');
  assert.equal(sel.body.dp_rank, 3);
});

test('loads lists created partitions with filters; potential_loads adds the prompt; both need a ready partition', async (t) => {
  const s = await startServer(t);
  assert.deepEqual((await s.call('GET', '/loads')).body, []);
  assert.equal((await s.call('POST', '/potential_loads', { model_name: 'model', token_ids: toks(8) })).status, 503);
  assert.equal((await s.call('POST', '/overlap_scores', { model_name: 'model', token_ids: toks(8) })).status, 503);
  await s.worker(1);
  await s.call('POST', '/workers', { worker_id: 2, model_name: 'other', routing_group: 'g', endpoint: 'http://w2', block_size: 4 });
  await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'l1', token_ids: toks(8) });
  const all = await s.call('GET', '/loads');
  assert.deepEqual(all.body.map((m: { model_name: string; routing_group: string }) => `${m.model_name}/${m.routing_group}`), ['model/default', 'other/g']);
  const one = await s.call('GET', '/loads?model_name=model');
  assert.deepEqual(one.body, [{
    model_name: 'model', routing_group: 'default', pending_count: 0, pending_isl_tokens: 0,
    loads: [{ worker_id: 1, dp_rank: 0, potential_prefill_tokens: 8, potential_decode_blocks: 2, active_requests: 1 }],
  }]);
  assert.deepEqual((await s.call('GET', '/loads?routing_group=g')).body.length, 1);
  const pot = await s.call('POST', '/potential_loads', { model_name: 'model', token_ids: toks(12) });
  assert.equal(pot.status, 200);
  assert.equal(pot.body[0].worker_id, 1);
  assert.ok(pot.body[0].potential_prefill_tokens > 8, 'the prompt adds prefill on top of the booking');
  assert.equal(pot.body[0].active_requests, 1);
});

test('dump: {} when empty; "model:group" -> {block_size, events} after bookings (approximate index)', async (t) => {
  const s = await startServer(t);
  assert.deepEqual((await s.call('GET', '/dump')).body, {});
  await s.worker(1);
  await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'd1', token_ids: toks(8) });
  const d = await s.call('GET', '/dump');
  assert.equal(d.status, 200);
  assert.equal(d.body['model:default'].block_size, 4);
  assert.ok(Array.isArray(d.body['model:default'].events));
  assert.ok(d.body['model:default'].events.length > 0, 'the booking was recorded');
  assert.equal(d.body['model:default'].events[0].worker_id, 1);
});

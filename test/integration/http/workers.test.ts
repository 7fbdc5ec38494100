/**
 * Worker catalog routes over a real server (Dynamo `lib/kv-router/src/services/selection/core/workers.rs`, `lib/kv-router/src/services/selection/core/mod.rs`, `lib/kv-router/src/services/selection/types.rs`): upsert 201 (also incomplete),
 * PATCH, DELETE, GET with filters, /health, /ready 200/503, u64 ids at the edges, path errors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './server.js';

test('POST /workers is a 201 upsert returning the record; GET lists sorted and filters', async (t) => {
  const s = await startServer(t);
  const r = await s.worker(2, { routing_group: 'b', taints: ['gpu'] });
  assert.equal(r.body.worker_id, 2);
  assert.equal(r.body.lifecycle, 'schedulable');
  assert.equal(r.body.endpoint, 'http://worker-2:8000');
  assert.equal(r.body.kv_transfer_domain, null, 'absent options serialize as null');
  assert.equal('not_schedulable_reasons' in r.body, false);
  await s.worker(1);
  await s.call('POST', '/workers', { worker_id: 3, model_name: 'other', endpoint: 'http://w3', block_size: 8 });
  const all = await s.call('GET', '/workers');
  assert.equal(all.status, 200);
  assert.deepEqual(all.body.map((w: { worker_id: number }) => w.worker_id), [2, 1, 3], 'sorted by (model, group, id): group "b" before "default"');
  assert.deepEqual((await s.call('GET', '/workers?model_name=model')).body.map((w: { worker_id: number }) => w.worker_id), [2, 1]);
  assert.deepEqual((await s.call('GET', '/workers?model_name=model&routing_group=b')).body.map((w: { worker_id: number }) => w.worker_id), [2]);
  assert.deepEqual((await s.call('GET', '/workers?routing_group=nope&tenant_id=x')).body, [], 'unknown filter values: []; unknown params ignored');
  const dup = await s.call('GET', '/workers?model_name=a&model_name=b');
  assert.equal(dup.status, 400);
  assert.match(dup.body.error, /model_name/);
  // upsert replaces the whole record
  const again = await s.call('POST', '/workers', { worker_id: 2, model_name: 'model', routing_group: 'b', endpoint: 'http://new:1', block_size: 4 });
  assert.equal(again.status, 201);
  assert.deepEqual(again.body.taints, []);
});

test('an incomplete worker is accepted (201) with reasons; /ready and /select are 503 until one is schedulable', async (t) => {
  const s = await startServer(t, { DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  const notReady = await s.call('GET', '/ready');
  assert.equal(notReady.status, 503);
  assert.deepEqual(notReady.body, { ready: false, schedulable_workers: 0, workers: [] });
  assert.equal((await s.call('POST', '/select', { model_name: 'model', token_ids: [1, 2, 3, 4] })).status, 503);
  const inc = await s.worker(1);
  assert.equal(inc.body.lifecycle, 'incomplete');
  assert.match(inc.body.not_schedulable_reasons[0], /max_num_batched_tokens/);
  const still = await s.call('GET', '/ready');
  assert.equal(still.status, 503);
  assert.equal(still.body.workers[0].lifecycle, 'incomplete', 'the 503 body carries the lifecycle details');
  const sel = await s.call('POST', '/select', { model_name: 'model', token_ids: [1, 2, 3, 4] });
  assert.equal(sel.status, 503);
  assert.deepEqual(Object.keys(sel.body), ['error']);
  const fixed = await s.call('PATCH', '/workers/1', { max_num_batched_tokens: 1024, endpoint: null });
  assert.equal(fixed.status, 200);
  assert.equal(fixed.body.lifecycle, 'schedulable');
  assert.equal(fixed.body.endpoint, 'http://worker-1:8000', 'null in a PATCH leaves the field unchanged');
  const ready = await s.call('GET', '/ready');
  assert.equal(ready.status, 200);
  assert.equal(ready.body.ready, true);
  assert.equal(ready.body.schedulable_workers, 1);
});

test('PATCH and DELETE of an unknown worker are 404; DELETE returns the record as unschedulable and removes it', async (t) => {
  const s = await startServer(t);
  const miss = await s.call('PATCH', '/workers/9', { block_size: 8 });
  assert.equal(miss.status, 404);
  assert.deepEqual(miss.body, { error: 'worker 9 not found' });
  assert.equal((await s.call('DELETE', '/workers/9')).status, 404);
  await s.worker(5);
  const del = await s.call('DELETE', '/workers/5');
  assert.equal(del.status, 200);
  assert.equal(del.body.lifecycle, 'unschedulable');
  assert.deepEqual((await s.call('GET', '/workers')).body, []);
  assert.equal((await s.call('DELETE', '/workers/5')).status, 404);
});

test('worker ids keep every digit: 0, 2^53+1, 2^63, 2^64-1 in bodies and paths', async (t) => {
  const s = await startServer(t);
  for (const id of ['0', '9007199254740993', '9223372036854775808', '18446744073709551615']) {
    const r = await s.worker(id);
    assert.match(r.text, new RegExp(`^\\{"worker_id":${id},`), `POST echoes ${id} exactly`);
    const p = await s.call('PATCH', `/workers/${id}`, { total_kv_blocks: 7 });
    assert.equal(p.status, 200);
    assert.equal(BigInt(p.body.worker_id), BigInt(id));
  }
  const list = await s.call('GET', '/workers');
  assert.match(list.text, /"worker_id":9007199254740993,/);
  assert.match(list.text, /"worker_id":18446744073709551615,/);
  const del = await s.call('DELETE', '/workers/18446744073709551615');
  assert.equal(del.status, 200);
  assert.equal(del.body.worker_id, 18446744073709551615n);
});

test('bad worker ids: a non-numeric or out-of-range path is 400, a body id that is not a u64 is 422 naming worker_id', async (t) => {
  const s = await startServer(t);
  for (const path of ['/workers/abc', '/workers/-1', '/workers/18446744073709551616', '/workers/1.5']) {
    const r = await s.call('DELETE', path);
    assert.equal(r.status, 400, path);
    assert.match(r.body.error, /Cannot parse `worker_id`/);
  }
  assert.equal((await s.call('PATCH', '/workers/x1', {})).status, 400);
  assert.equal((await s.call('PATCH', '/workers/x1')).status, 400, 'the path is checked before the body');
  for (const body of ['{"worker_id": -1}', '{"worker_id": 18446744073709551616}', '{"worker_id": "1"}', '{"model_name": "m"}']) {
    const r = await s.call('POST', '/workers', body);
    assert.equal(r.status, 422, body);
    assert.match(r.body.error, /worker_id/);
  }
  const bad = await s.call('POST', '/workers', { worker_id: 1, block_size: 'four' });
  assert.equal(bad.status, 422);
  assert.match(bad.body.error, /block_size/);
  assert.deepEqual((await s.call('GET', '/workers')).body, [], 'nothing was registered');
});

test('/health is always 200 {"status":"ok"}', async (t) => {
  const s = await startServer(t);
  const r = await s.call('GET', '/health');
  assert.equal(r.status, 200);
  assert.equal(r.text, '{"status":"ok"}');
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
});

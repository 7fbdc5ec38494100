/**
 * The reservation lifecycle over a real server (Dynamo `lib/kv-router/src/services/selection/core/reservations.rs`), after Dynamo's HTTP
 * scenarios (Dynamo `lib/kv-router/src/services/selection/tests.rs`): replay (single use), explicit form checks, 422 without selection_id,
 * prefill_complete, output_block bodies, DELETE twice, and an explicit replay on a second
 * server that keeps prefill tracking off.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rawRequest, startServer, toks } from './server.js';

const load = async (s: Awaited<ReturnType<typeof startServer>>) => (await s.call('GET', '/loads')).body[0].loads[0];

test('replay form: /select with an id, then /reservations books the same worker once; a second replay is 404', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.worker(2);
  const sel = await s.call('POST', '/select', { model_name: 'model', selection_id: 'sel-1', token_ids: toks(4) });
  const r = await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'sel-1', token_ids: toks(99), effective_prefill_tokens: 1 });
  assert.equal(r.status, 201);
  assert.deepEqual(r.body, {
    selection_id: 'sel-1', model_name: 'model', routing_group: 'default', worker_id: sel.body.worker_id, dp_rank: 0,
    endpoint: `http://worker-${sel.body.worker_id}:8000`,
  });
  const loads = (await s.call('GET', '/loads')).body[0].loads;
  assert.equal(loads.reduce((n: number, l: { potential_prefill_tokens: number }) => n + l.potential_prefill_tokens, 0), 4,
    'the cached inputs are booked; request overrides are ignored');
  assert.equal((await s.call('POST', '/reservations/sel-1/prefill_complete')).status, 200);
  const again = await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'sel-1' });
  assert.equal(again.status, 404);
  assert.match(again.body.error, /no pending selection sel-1/);
  await s.call('POST', '/select', { model_name: 'model', selection_id: 'sel-2', token_ids: toks(4) });
  assert.equal((await s.call('POST', '/reservations', { model_name: 'other', selection_id: 'sel-2' })).status, 404, 'wrong model');
  assert.equal((await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'sel-2' })).status, 201, 'the entry survived');
});

test('a reservation without selection_id is a 422 that names it', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  const r = await s.call('POST', '/reservations', { model_name: 'model', worker_id: 1, token_ids: toks(4) });
  assert.equal(r.status, 422);
  assert.match(r.body.error, /selection_id/);
  assert.equal((await load(s)).active_requests, 0);
});

test('explicit form: books after a select, effective_prefill above isl is 400, an unschedulable worker is 404', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.call('POST', '/workers', { worker_id: 2, model_name: 'model', block_size: 4 }); // no endpoint: incomplete
  await s.call('POST', '/select', { model_name: 'model', selection_id: 'exp-1', token_ids: toks(4) });
  const over = await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'exp-1', worker_id: 1, token_ids: toks(4), effective_prefill_tokens: 5 });
  assert.equal(over.status, 400);
  assert.match(over.body.error, /must not exceed isl_tokens/);
  const gone = await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'exp-1', worker_id: 2, token_ids: toks(4) });
  assert.equal(gone.status, 404);
  assert.match(gone.body.error, /schedulable worker 2 not found/);
  const ok = await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'exp-1', worker_id: 1, dp_rank: 0, token_ids: toks(4) });
  assert.equal(ok.status, 201);
  assert.equal(ok.body.worker_id, 1);
  assert.equal((await load(s)).potential_prefill_tokens, 4);
  const dup = await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'exp-1', worker_id: 1, token_ids: toks(4) });
  assert.equal(dup.status, 409);
  assert.equal((await s.call('POST', '/reservations/exp-1/prefill_complete')).status, 200);
  assert.equal((await s.call('POST', '/reservations/exp-1/prefill_complete')).status, 200, 'idempotent on a live booking');
  const l = await load(s);
  assert.deepEqual([l.active_requests, l.potential_prefill_tokens, l.potential_decode_blocks], [1, 0, 1]);
});

test('output_block needs a JSON object: {} adds a block, decay_fraction 1.5 is 400, no body 415, an array 422', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'ob', token_ids: toks(4) });
  const before = (await load(s)).potential_decode_blocks;
  assert.deepEqual((await s.call('POST', '/reservations/ob/output_block', {})).body, { status: 'ok' });
  assert.equal((await load(s)).potential_decode_blocks, before + 1);
  const range = await s.call('POST', '/reservations/ob/output_block', { decay_fraction: 1.5 });
  assert.equal(range.status, 400);
  assert.equal(range.body.error, 'decay_fraction must be between 0.0 and 1.0');
  assert.equal((await rawRequest(s.base, 'POST', '/reservations/ob/output_block')).status, 415);
  assert.equal((await s.call('POST', '/reservations/ob/output_block', '[]')).status, 422);
  assert.equal((await s.call('POST', '/reservations/ob/output_block', { decay_fraction: 'x' })).status, 422);
  assert.equal((await s.call('POST', '/reservations/ob/output_block', { decay_fraction: 0.5 })).status, 200);
  assert.equal((await s.call('POST', '/reservations/nope/output_block', {})).status, 404);
});

test('DELETE frees the booking; a second DELETE, a prefill_complete and an output_block after it are 404', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'del', token_ids: toks(8) });
  const first = await s.call('DELETE', '/reservations/del');
  assert.deepEqual([first.status, first.body], [200, { status: 'ok' }]);
  const l = await load(s);
  assert.deepEqual([l.active_requests, l.potential_prefill_tokens, l.potential_decode_blocks], [0, 0, 0]);
  const second = await s.call('DELETE', '/reservations/del');
  assert.deepEqual([second.status, second.body], [404, { error: 'reservation del was already freed' }]);
  for (const [method, path, body] of [['POST', '/reservations/del/prefill_complete', undefined], ['POST', '/reservations/del/output_block', {}]] as const) {
    const r = await s.call(method, path, body);
    assert.deepEqual([r.status, r.body], [404, { error: 'reservation del was already freed' }], path);
  }
  const never = await s.call('DELETE', '/reservations/never-booked');
  assert.deepEqual([never.status, never.body], [404, { error: 'reservation never-booked not found' }]);
});

test('reservation ids are any string: long ids and escaped characters round-trip through the path', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  for (const id of ['x'.repeat(600), 'a b/c?d#e%f', 'ünï-çødé']) {
    const r = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: id, token_ids: toks(4) });
    assert.equal(r.status, 200);
    const path = `/reservations/${encodeURIComponent(id)}`;
    assert.equal((await s.call('POST', `${path}/output_block`, {})).status, 200, id);
    assert.equal((await s.call('POST', `${path}/prefill_complete`)).status, 200, id);
    assert.equal((await s.call('DELETE', path)).status, 200, id);
  }
});

test('prefill_complete and DELETE ignore any body, whatever its content type', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'ig', token_ids: toks(4) });
  const r1 = await rawRequest(s.base, 'POST', '/reservations/ig/prefill_complete', 'not json', { 'content-type': 'text/plain' });
  assert.equal(r1.status, 200);
  const r2 = await rawRequest(s.base, 'DELETE', '/reservations/ig', '{broken', { 'content-type': 'application/json' });
  assert.equal(r2.status, 200);
});

test('explicit replay on a second server keeps prefill tracking off (explicit_replay_preserves_disabled_prefill_tracking)', async (t) => {
  const a = await startServer(t);
  const b = await startServer(t);
  for (const s of [a, b]) await s.worker(1);
  const r = await a.call('POST', '/select_and_reserve', {
    model_name: 'model', selection_id: 'x1', token_ids: toks(4), router_config_override: { track_prefill_tokens: false },
  });
  assert.equal(r.body.track_prefill_tokens, false);
  const replay = await b.call('POST', '/reservations', {
    model_name: 'model', selection_id: 'x1', worker_id: r.body.worker_id, dp_rank: r.body.dp_rank,
    sequence_hashes: r.body.sequence_hashes, isl_tokens: r.body.isl_tokens, track_prefill_tokens: r.body.track_prefill_tokens,
  });
  assert.equal(replay.status, 201, replay.text);
  for (const s of [a, b]) {
    const l = await load(s);
    assert.deepEqual([l.active_requests, l.potential_prefill_tokens, l.potential_decode_blocks], [1, 0, 1]);
    const p = await s.call('POST', '/potential_loads', { model_name: 'model', token_ids: toks(4) });
    assert.equal(p.body[0].potential_decode_blocks, 1, 'the same prompt adds no new block');
  }
});

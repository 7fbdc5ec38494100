/**
 * SelectionCore, in virtual time: our versions of Dynamo's HTTP-level and core scenarios
 * (Dynamo `lib/kv-router/src/services/selection/tests.rs`, `lib/kv-router/src/services/selection/core/tests.rs`) that the catalog, selection, reservations, pending cache, loads, overlap
 * scores and shutdown cover.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCore, rejects, worker } from './core-helpers.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { blockHashes, sequenceHashes } from '../../../src/core/index/hashing.js';

const TOKENS4 = [1, 2, 3, 4];

test('not ready without schedulable workers; select is 503', async () => {
  const { core } = makeCore();
  assert.deepEqual(core.ready(), { ready: false, schedulable_workers: 0, workers: [] });
  await rejects(() => core.select({ model_name: 'model', token_ids: TOKENS4 }), 503,
    'no schedulable workers are available: no worker is registered (POST /workers registers one)');
});

test('an incomplete worker is accepted but not schedulable (queueing needs max_num_batched_tokens)', async () => {
  const { core } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  const rec = core.upsertWorker(worker(1));
  assert.equal(rec.lifecycle, 'incomplete');
  assert.match(rec.not_schedulable_reasons![0], /max_num_batched_tokens/);
  await rejects(() => core.select({ model_name: 'model', token_ids: TOKENS4 }), 503);
  const ok = core.upsertWorker(worker(1, { max_num_batched_tokens: 1024 }));
  assert.equal(ok.lifecycle, 'schedulable');
  assert.equal(ok.not_schedulable_reasons, undefined);
});

test('worker record: defaults, nulls and omitted fields', () => {
  const { core } = makeCore();
  const rec = core.upsertWorker({ worker_id: 5, endpoint: 'http://w:1', block_size: 16 });
  assert.equal(rec.worker_id, 5n);
  assert.equal(rec.model_name, 'default');
  assert.equal(rec.routing_group, 'default');
  assert.equal(rec.kv_events_endpoint, null);
  assert.equal(rec.data_parallel_size, null);
  assert.deepEqual(rec.taints, []);
  assert.equal(rec.lifecycle, 'schedulable');
  // kv_events_endpoints: omitted when empty, as Dynamo's newest types.rs (issue 15)
  for (const k of ['kv_events_endpoints', 'router_hint_worker_type', 'router_hint_source_control_endpoints', 'kv_event_source_mode',
    'not_schedulable_reasons']) {
    assert.ok(!(k in rec), `${k} omitted`);
  }
});

test('schedulability reasons in the spec order and words', () => {
  const { core } = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true' });
  const rec = core.upsertWorker({ worker_id: 1, block_size: 0, data_parallel_size: 2, replay_endpoint: 'tcp://127.0.0.1:5' ,
    kv_events_endpoints: { 1: 'tcp://127.0.0.1:6' } });
  assert.deepEqual(rec.not_schedulable_reasons, [
    'endpoint is required',
    'block_size must be greater than 0',
    'kv_events endpoint is required for dp_rank 0',
    'replay_endpoint is supported only for data_parallel_size 1',
  ]);
  const zero = core.upsertWorker({ worker_id: 2, endpoint: 'http://w', block_size: 4, data_parallel_size: 0 });
  assert.deepEqual(zero.not_schedulable_reasons, ['data_parallel_size must be greater than 0']);
});

test('a partition fixes block_size and is_eagle; a mismatch is "reconciliation failed"', () => {
  const { core } = makeCore();
  assert.equal(core.upsertWorker(worker(1)).lifecycle, 'schedulable');
  const bad = core.upsertWorker(worker(2, { block_size: 8 }));
  assert.equal(bad.lifecycle, 'incomplete');
  assert.match(bad.not_schedulable_reasons![0], /^reconciliation failed: .*block_size 4/);
  const eagle = core.upsertWorker(worker(3, { is_eagle: true }));
  assert.match(eagle.not_schedulable_reasons![0], /^reconciliation failed: .*is_eagle/);
  assert.equal(core.ready().schedulable_workers, 1);
});

test('GET /workers is sorted by (model, group, id) and filters', () => {
  const { core } = makeCore();
  core.upsertWorker(worker(3));
  core.upsertWorker(worker(1, { routing_group: 'b' }));
  core.upsertWorker(worker(2, { model_name: 'a' }));
  assert.deepEqual(core.listWorkers().map((w) => w.worker_id), [2n, 1n, 3n]);
  assert.deepEqual(core.listWorkers({ routing_group: 'b' }).map((w) => w.worker_id), [1n]);
  assert.deepEqual(core.listWorkers({ model_name: 'nope' }), []);
});

test('select echoes the id, books nothing, reports zero overlap per rank, no legacy fields', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const res = await core.select({ model_name: 'model', selection_id: 'select-1', token_ids: TOKENS4 });
  assert.equal(res.selection_id, 'select-1');
  assert.equal(res.routing_group, 'default');
  assert.equal(res.worker_id, 1n);
  assert.equal(res.endpoint, 'http://worker-1:8000');
  assert.equal(res.effective_prefill_tokens, 4);
  assert.equal(res.overlap.longest_matched, 0);
  assert.equal(res.overlap.dp['0'], 0);
  for (const k of ['cached_tokens', 'effective_overlap_blocks', 'tenant_id', 'sequence_hashes', 'isl_tokens', 'track_prefill_tokens', 'decode_busy', 'worker_load']) {
    assert.ok(!(k in res), `${k} absent`);
  }
  assert.equal(core.loads()[0].loads[0].active_requests, 0);
});

test('overlap scores list every schedulable rank sorted by (worker, rank)', () => {
  const { core } = makeCore();
  core.upsertWorker(worker(2, { data_parallel_start_rank: 2, data_parallel_size: 2 }));
  core.upsertWorker(worker(1));
  const res = core.overlapScores({ model_name: 'model', token_ids: TOKENS4 });
  assert.deepEqual(res.workers.map((r) => [r.worker_id, r.dp_rank]), [[1n, 0], [2n, 2], [2n, 3]]);
  assert.equal(res.num_blocks, 1);
  assert.equal(res.block_size, 4);
  assert.ok(res.workers.every((r) => r.device_blocks === 0 && r.disk_blocks === 0 && r.router_credit_blocks === 0));
  assert.equal(res.shared_cache.enabled, false);
});

test('select_and_reserve books, returns chained sequence hashes, duplicate is 409, free then 404', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const res = await core.selectAndReserve({ model_name: 'model', selection_id: 'r-1', token_ids: TOKENS4 });
  assert.equal(res.selection_id, 'r-1');
  assert.equal(res.effective_prefill_tokens, 4);
  assert.equal(res.isl_tokens, 4);
  assert.equal(res.track_prefill_tokens, true);
  const expected = sequenceHashes(blockHashes(TOKENS4, 4)).map((h) => BigInt.asIntN(64, h));
  assert.deepEqual(res.sequence_hashes, expected);
  const l = core.loads()[0].loads[0];
  assert.deepEqual([l.active_requests, l.potential_prefill_tokens, l.potential_decode_blocks], [1, 4, 1]);
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'r-1', token_ids: TOKENS4 }), 409,
    'selection r-1 is already reserved or being reserved');
  assert.deepEqual(core.freeReservation('r-1'), { status: 'ok' });
  await rejects(() => core.freeReservation('r-1'), 404, 'reservation r-1 was already freed');
  await rejects(() => core.freeReservation('r-never'), 404, 'reservation r-never not found');
  assert.equal(core.loads()[0].loads[0].active_requests, 0);
});

test('select_and_reserve without an id generates a UUIDv4', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const res = await core.selectAndReserve({ model_name: 'model', token_ids: TOKENS4 });
  assert.match(res.selection_id!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  core.freeReservation(res.selection_id!);
});

test('the same selection id in two partitions is a conflict', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  core.upsertWorker(worker(2, { routing_group: 'other' }));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'x', token_ids: TOKENS4 });
  await rejects(() => core.selectAndReserve({ model_name: 'model', routing_group: 'other', selection_id: 'x', token_ids: TOKENS4 }), 409);
  await rejects(() => core.createReservation({ model_name: 'model', routing_group: 'other', selection_id: 'x', worker_id: 2, token_ids: TOKENS4 }), 409);
  assert.equal(core.loads({ routing_group: 'other' })[0].loads[0].active_requests, 0);
});

test('explicit reservation replaying a no-prefill-tracking booking keeps tracking off', async () => {
  const a = makeCore().core, b = makeCore().core;
  a.upsertWorker(worker(1));
  b.upsertWorker(worker(1));
  const res = await a.selectAndReserve({ model_name: 'model', selection_id: 's', token_ids: TOKENS4,
    router_config_override: { track_prefill_tokens: false } });
  assert.equal(res.track_prefill_tokens, false);
  await b.createReservation({ model_name: 'model', selection_id: 's', worker_id: res.worker_id, dp_rank: res.dp_rank,
    sequence_hashes: res.sequence_hashes, isl_tokens: res.isl_tokens, track_prefill_tokens: res.track_prefill_tokens });
  for (const core of [a, b]) {
    const l = core.loads()[0].loads[0];
    assert.deepEqual([l.active_requests, l.potential_prefill_tokens, l.potential_decode_blocks], [1, 0, 1]);
  }
  const pl = b.potentialLoads({ model_name: 'model', sequence_hashes: res.sequence_hashes, block_hashes: blockHashes(TOKENS4, 4), isl_tokens: 4,
    router_config_override: { track_prefill_tokens: false } });
  assert.equal(pl[0].potential_decode_blocks, 1);
});

test('output_block adds a decode block; decay_fraction range is 400; {} works; after free 404', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'o', token_ids: TOKENS4 });
  const before = core.loads()[0].loads[0].potential_decode_blocks;
  core.addOutputBlock('o', {});
  assert.equal(core.loads()[0].loads[0].potential_decode_blocks, before + 1);
  await rejects(() => core.addOutputBlock('o', { decay_fraction: 1.5 }), 400, 'decay_fraction must be between 0.0 and 1.0');
  await rejects(() => core.addOutputBlock('nope', { decay_fraction: -0.1 }), 400);
  await rejects(() => core.addOutputBlock('o', null as unknown as object), 422);
  core.freeReservation('o');
  await rejects(() => core.addOutputBlock('o', {}), 404);
});

test('explicit reservation: books after select, effective > isl is 400, unschedulable worker is 404', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  core.upsertWorker({ worker_id: 9, model_name: 'model', block_size: 4 });
  const sel = await core.select({ model_name: 'model', token_ids: TOKENS4 });
  const r = await core.createReservation({ model_name: 'model', selection_id: 'e', worker_id: sel.worker_id, token_ids: TOKENS4 });
  assert.deepEqual(r, { selection_id: 'e', model_name: 'model', routing_group: 'default', worker_id: 1n, dp_rank: 0, endpoint: 'http://worker-1:8000' });
  assert.equal(core.loads()[0].loads[0].potential_prefill_tokens, 4);
  assert.deepEqual(core.prefillComplete('e'), { status: 'ok' });
  assert.deepEqual(core.prefillComplete('e'), { status: 'ok' }, 'idempotent');
  assert.equal(core.loads()[0].loads[0].potential_prefill_tokens, 0);
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'e2', worker_id: 1, token_ids: TOKENS4, effective_prefill_tokens: 5 }),
    400, /must not exceed isl_tokens/);
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'e3', worker_id: 9, token_ids: TOKENS4 }), 404,
    /^schedulable worker 9 not found for partition "model\/default"/);
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'e', worker_id: 1, token_ids: TOKENS4 }), 409);
});

test('replay reservation books the cached selection once', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  core.upsertWorker(worker(2));
  const sel = await core.select({ model_name: 'model', selection_id: 'c', token_ids: TOKENS4 });
  const r = await core.createReservation({ model_name: 'model', selection_id: 'c' });
  assert.equal(r.worker_id, sel.worker_id);
  assert.equal(r.dp_rank, sel.dp_rank);
  const load = core.loads()[0].loads.find((l) => l.worker_id === sel.worker_id)!;
  assert.equal(load.potential_prefill_tokens, 4);
  core.prefillComplete('c');
  core.freeReservation('c');
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'c' }), 404,
    'no pending selection c for partition "model/default" (expired, already used, or never selected)');
});

test('replay ignores request overrides and needs the matching partition', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  await core.select({ model_name: 'model', selection_id: 'c', token_ids: TOKENS4 });
  await rejects(() => core.createReservation({ model_name: 'other', selection_id: 'c' }), 404);
  await core.createReservation({ model_name: 'model', selection_id: 'c', effective_prefill_tokens: 1, track_prefill_tokens: false,
    router_config_override: { track_prefill_tokens: false } });
  assert.equal(core.loads()[0].loads[0].potential_prefill_tokens, 4);
});

test('replay failures keep the entry: 503 partition not ready, 409 conflict, 404 stale rank', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  await core.select({ model_name: 'model', selection_id: 'c', token_ids: TOKENS4 });
  core.deleteWorker(1n);
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'c' }), 503);
  core.upsertWorker(worker(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'c', token_ids: TOKENS4 });
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'c' }), 409);
  core.freeReservation('c');
  core.upsertWorker(worker(1, { data_parallel_start_rank: 1 }));
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'c' }), 404,
    /^schedulable worker 1 \(dp_rank 0\) not found for partition "model\/default"/);
  core.upsertWorker(worker(1));
  assert.equal((await core.createReservation({ model_name: 'model', selection_id: 'c' })).worker_id, 1n);
});

test('an explicit reservation discards the cached selection', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  await core.select({ model_name: 'model', selection_id: 'c', token_ids: TOKENS4 });
  await core.createReservation({ model_name: 'model', selection_id: 'c', worker_id: 1, token_ids: TOKENS4 });
  core.freeReservation('c');
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'c' }), 404);
});

test('cached booking honours prefill tracking (config off; select-time override on)', async () => {
  const { core } = makeCore({ DYN_ROUTER_TRACK_PREFILL_TOKENS: 'false' });
  core.upsertWorker(worker(1));
  await core.select({ model_name: 'model', selection_id: 'a', token_ids: TOKENS4 });
  await core.createReservation({ model_name: 'model', selection_id: 'a' });
  assert.equal(core.loads()[0].loads[0].potential_prefill_tokens, 0);
  // another prompt: the replayed booking of 'a' was recorded into the approximate index, and a
  // cached prefix would (rightly) make 'b' cost no prefill
  await core.select({ model_name: 'model', selection_id: 'b', token_ids: [5, 6, 7, 8], router_config_override: { track_prefill_tokens: true } });
  await core.createReservation({ model_name: 'model', selection_id: 'b' });
  assert.equal(core.loads()[0].loads[0].potential_prefill_tokens, 4);
});

test('a reservation without selection_id is a 422 naming the field', async () => {
  const { core } = makeCore();
  const err = await rejects(() => core.createReservation({ model_name: 'model', worker_id: 1 }), 422);
  assert.match(err.message, /selection_id/);
});

test('hash-path validation messages; -1 is u64::MAX and trusted hashes are used as given', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const m = { model_name: 'model' };
  await rejects(() => core.select({ ...m }), 400, 'block_hashes is required without token_ids');
  await rejects(() => core.select({ ...m, block_hashes: [1] }), 400, 'sequence_hashes is required without token_ids');
  await rejects(() => core.select({ ...m, block_hashes: [1], sequence_hashes: [1] }), 400, 'isl_tokens is required without token_ids');
  await rejects(() => core.select({ ...m, block_hashes: [1], sequence_hashes: [1], isl_tokens: 0 }), 400, 'isl_tokens must be greater than 0');
  await rejects(() => core.select({ ...m, block_hashes: [1, 2], sequence_hashes: [1], isl_tokens: 4 }), 400,
    'block_hashes length 2 must match sequence_hashes length 1');
  const res = await core.selectAndReserve({ ...m, selection_id: 'h', block_hashes: [-1], sequence_hashes: [-1], isl_tokens: 4 });
  assert.deepEqual(res.sequence_hashes, [-1n]);
  assert.equal(core.loads()[0].loads[0].potential_decode_blocks, 1);
});

test('expiry: a booking older than 300 s is reclaimed by the 60 s sweep, not before', async () => {
  const { core, clock } = makeCore();
  core.upsertWorker(worker(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'x', token_ids: TOKENS4 });
  clock.advanceSecs(299);
  core.maintain();
  assert.equal(core.loads()[0].loads[0].active_requests, 1);
  clock.advanceSecs(2); // 301 s: the sweep at 300 s saw age 300 (not older); next one is due at 360 s
  core.maintain();
  clock.advanceSecs(60);
  core.maintain();
  assert.equal(core.loads()[0].loads[0].active_requests, 0);
  await rejects(() => core.prefillComplete('x'), 404);
});

test('shutdown: selections and mutations fail 503, delete still works, ready reports the count', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  core.shutdown();
  await rejects(() => core.select({ model_name: 'model', token_ids: TOKENS4 }), 503, 'selection service is shutting down');
  await rejects(() => core.upsertWorker(worker(2)), 503, 'selection service is shutting down');
  assert.deepEqual([core.ready().ready, core.ready().schedulable_workers], [false, 1]);
  assert.equal(core.deleteWorker(1n).lifecycle, 'unschedulable');
});

test('re-posting a worker with another routing group moves it; PATCH cannot move; 404 unknown', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'm', token_ids: TOKENS4 });
  core.upsertWorker(worker(1, { routing_group: 'g2' }));
  await rejects(() => core.select({ model_name: 'model', token_ids: TOKENS4 }), 503, 'no schedulable workers for partition "model/default": '
    + 'routing_group was not given, so "default" was assumed; model "model" has no worker in routing group "default", only in "g2"');
  await rejects(() => core.freeReservation('m'), 404, 'reservation m was freed when its worker 1 left the partition (re-registered)');
  assert.equal((await core.select({ model_name: 'model', routing_group: 'g2', token_ids: TOKENS4 })).worker_id, 1n);
  const p = core.patchWorker(1n, { routing_group: 'default', taints: ['a'], endpoint: null });
  assert.equal(p.routing_group, 'g2');
  assert.deepEqual(p.taints, ['a']);
  assert.equal(p.endpoint, 'http://worker-1:8000');
  await rejects(() => core.patchWorker(77n, {}), 404, 'worker 77 not found');
});

test('DELETE drains the worker and releases its bookings', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  core.upsertWorker(worker(2));
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'd', token_ids: TOKENS4 });
  const rec = core.deleteWorker(r.worker_id);
  assert.equal(rec.lifecycle, 'unschedulable');
  assert.equal(core.listWorkers().length, 1);
  await rejects(() => core.prefillComplete('d'), 404);
  await rejects(() => core.deleteWorker(r.worker_id), 404);
});

test('KV-aware: cached prefix on one worker wins, with gpu/cpu/dp overlap in tokens', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  core.upsertWorker(worker(2, { data_parallel_size: 2 }));
  const tokens = Array.from({ length: 16 }, (_, i) => i + 1);
  const locals = blockHashes(tokens, 4);
  const part = core.partition('model', 'default')!;
  part.index.stored(2n, 1, Tier.Device, null, locals.slice(0, 2).map((local, i) => ({ ext: 100n + BigInt(i), local })));
  part.index.stored(2n, 1, Tier.Host, 101n, [{ ext: 102n, local: locals[2] }]);
  const res = await core.select({ model_name: 'model', token_ids: tokens });
  assert.equal(res.worker_id, 2n);
  assert.equal(res.dp_rank, 1);
  assert.deepEqual(res.overlap, { longest_matched: 12, gpu: 8, dp: { '0': 0, '1': 8 }, cpu: 12, disk: 12 });
  // cached = round(4 * (2 + 0.75 * 1)) = 11
  assert.equal(res.effective_prefill_tokens, 5);
  const rows = core.overlapScores({ model_name: 'model', token_ids: tokens }).workers;
  const row = rows.find((r) => r.worker_id === 2n && r.dp_rank === 1)!;
  assert.deepEqual([row.device_blocks, row.host_pinned_blocks, row.disk_blocks, row.host_pinned_extension_blocks], [2, 3, 3, 1]);
  assert.equal(row.router_credit_blocks, 2.75);
});

test('routing constraints: allowed ids, required taints, pinned (and its 400), affinity target', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1, { taints: ['gpu-a'] }));
  core.upsertWorker(worker(2));
  const base = { model_name: 'model', token_ids: TOKENS4 };
  for (let i = 0; i < 5; i++) assert.equal((await core.select({ ...base, allowed_worker_ids: [2] })).worker_id, 2n);
  assert.equal((await core.select({ ...base, routing_constraints: { required_taints: ['gpu-a'] } })).worker_id, 1n);
  assert.equal((await core.select({ ...base, pinned_worker: { worker_id: 1, dp_rank: 0 } })).worker_id, 1n);
  await rejects(() => core.select({ ...base, allowed_worker_ids: [2], pinned_worker: { worker_id: 1, dp_rank: 0 } }), 400,
    'pinned worker 1 is not in allowed worker set');
  assert.equal((await core.select({ ...base, affinity_target: { worker_id: 2 } })).worker_id, 2n);
  await rejects(() => core.select({ ...base, routing_constraints: { required_taints: ['none'] } }), 503);
  await rejects(() => core.select({ ...base, router_config_override: { router_temperature: -1 } }), 422);
});

test('load balancing: with equal cache, bookings spread across workers', async () => {
  const { core } = makeCore();
  for (let w = 1; w <= 4; w++) core.upsertWorker(worker(w));
  const seen = new Set<bigint>();
  for (let i = 0; i < 4; i++) {
    const r = await core.selectAndReserve({ model_name: 'model', token_ids: Array.from({ length: 64 }, (_, t) => i * 1000 + t) });
    seen.add(r.worker_id);
  }
  assert.equal(seen.size, 4);
});

test('advisory select adds worker_load and busy flags when configured; decode_busy on bookings', async () => {
  const { core } = makeCore({ DYN_ROUTER_CONDITIONAL_DISAGG_DECODE_BUSY_THRESHOLD: '0.0', DYN_ROUTER_CONDITIONAL_DISAGG_PREFILL_BUSY_THRESHOLD: '0.5' });
  core.upsertWorker(worker(1, { max_num_batched_tokens: 1024, total_kv_blocks: 1000 }));
  const res = await core.select({ model_name: 'model', token_ids: TOKENS4, advisory: true });
  assert.deepEqual(res.worker_load, { active_prefill_tokens: 0, prefill_token_capacity: 1024, total_kv_blocks: 1000, prefill_busy: false });
  assert.equal(res.decode_busy, true);
  const plain = makeCore().core;
  plain.upsertWorker(worker(1, { max_num_batched_tokens: 1024 }));
  const r2 = await plain.select({ model_name: 'model', token_ids: TOKENS4, advisory: true });
  assert.deepEqual(r2.worker_load, { active_prefill_tokens: 0, prefill_token_capacity: 1024 });
  assert.ok(!('decode_busy' in r2));
});

test('issue 29: a DELETE of an id held nowhere here is still reported (onUnknownFree) and answers 404; a held or in-flight one is not', async () => {
  const unknown: string[] = [];
  const { core } = makeCore({}, { hooks: { onUnknownFree: (id) => unknown.push(id) } });
  core.upsertWorker(worker(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'held', token_ids: [1, 2, 3, 4] });
  core.freeReservation('held');
  await rejects(() => core.freeReservation('never'), 404, 'reservation never not found');
  await rejects(() => core.freeReservation('held'), 404, 'reservation held was already freed');
  assert.deepEqual(unknown, ['never', 'held'], 'a repeated free is reported again: a peer may have missed the first');
  const claim = core.reservations.claim('in-flight', 'x');
  await rejects(() => core.freeReservation('in-flight'), 404);
  assert.deepEqual(unknown, ['never', 'held'], 'a claim in flight here is not');
  core.reservations.release(claim);
});

test('issue 29: replicaEventOutcome says why a peer\'s event is dropped; an admission keeps its owner and age', () => {
  const { core, clock } = makeCore();
  core.upsertWorker(worker(1));
  clock.advanceSecs(1000);
  const ref = { modelName: 'model', routingGroup: 'default', blockSize: 4, workerId: 1n, dpRank: 0, loraName: null };
  const add = (requestId: string, extra = {}) => ({ ...ref, requestId, kind: 'add' as const, seq: new BigUint64Array([5n]),
    trackPrefillTokens: true, expectedOutputTokens: null, prefillTokens: 4, ...extra });
  assert.equal(core.replicaEventOutcome({ ...add('a'), modelName: 'other' }), 'unknown_partition');
  assert.equal(core.replicaEventOutcome({ ...add('a'), blockSize: 8 }), 'block_size_mismatch');
  assert.equal(core.replicaEventOutcome({ ...add('a'), workerId: 2n }), 'unknown_worker');
  assert.equal(core.replicaEventOutcome({ ...ref, requestId: 'a', kind: 'free' }), 'unknown_booking');
  assert.equal(core.replicaEventOutcome(add('a', { ageMs: 200_000 }), 77n), 'applied');
  assert.equal(core.reservations.lookup('a')!.owner, 77n);
  assert.equal(core.partition('model', 'default')!.loads.snapshot('a')!.admittedAt, clock.now() - 200_000);
  core.reservations.claim('c', 'elsewhere');
  assert.equal(core.replicaEventOutcome(add('c')), 'id_conflict');
  assert.equal(core.applyReplicaEvent({ ...ref, requestId: 'a', kind: 'free' }), true);
});

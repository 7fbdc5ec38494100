/**
 * Issue 15 in the core: one regression test per defect the core owns (1, 2, 3, 5, 9), and the
 * wire details settled against Dynamo's source. Every rejection is checked to change nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCore, rejects, worker } from './core-helpers.js';
import { show } from '../../../src/core/wire/show.js';
import { stringifyJson } from '../../../src/core/wire/json.js';
import { LIMITS } from '../../../src/core/config/config.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { blockHashes } from '../../../src/core/index/hashing.js';
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

test('defect 2: size-like inputs are bounded with a 422 naming the field and the limit', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const before = snapshot(core);
  const L = LIMITS;
  const cases: [Record<string, unknown>, RegExp][] = [
    [worker(9, { data_parallel_size: 4294967295 }), /data_parallel_size: must be at most 1024 \(got 4294967295\)/],
    [worker(9, { data_parallel_size: L.maxDataParallelSize + 1 }), /data_parallel_size: must be at most 1024/],
    [worker(9, { data_parallel_start_rank: L.maxDataParallelStartRank + 1 }), /data_parallel_start_rank: must be at most 65535/],
    [worker(9, { block_size: L.maxBlockSize + 1 }), /block_size: must be at most 65536/],
    [worker(9, { taints: Array.from({ length: L.maxTaints + 1 }, (_, i) => `t${i}`) }), /taints: more than the limit of 64 taints/],
    [worker(9, { topology_domains: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }), /topology_domains: more than the limit of 64/],
    [worker(9, { kv_events_endpoints: Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [String(i), 'tcp://h:1'])) }),
      /kv_events_endpoints: more than the limit of 1024 ranks/],
    [worker(9, { endpoint: 'h'.repeat(L.maxStringChars + 1) }), /endpoint: longer than the limit of 4096 characters/],
    [worker(9, { model_name: 'm'.repeat(L.maxStringChars + 1) }), /model_name: longer than the limit of 4096 characters/],
  ];
  for (const [body, message] of cases) await rejects(() => core.upsertWorker(body), 422, message);
  await rejects(() => core.patchWorker(1n, { data_parallel_size: 5000 }), 422, /data_parallel_size: must be at most 1024/);
  const big = { model_name: 'model', token_ids: TOKENS };
  await rejects(() => core.select({ ...big, allowed_worker_ids: Array(L.maxAllowedWorkerIds + 1).fill(1) }), 422,
    /allowed_worker_ids: more than the limit of 65536 worker ids/);
  await rejects(() => core.select({ ...big, routing_constraints: { required_taints: Array(65).fill('a') } }), 422,
    /routing_constraints.required_taints: more than the limit of 64 taints/);
  await rejects(() => core.select({ ...big, selection_id: 's'.repeat(5000) }), 422, /selection_id: longer than the limit/);
  await rejects(() => core.createReservation({ selection_id: 's'.repeat(5000) }), 422, /selection_id: longer than the limit/);
  assert.equal(snapshot(core), before, 'nothing changed');
  // the limits themselves are accepted, and the record lists one reason per missing rank at most
  const rec = core.upsertWorker(worker(9, { data_parallel_size: L.maxDataParallelSize, data_parallel_start_rank: L.maxDataParallelStartRank }));
  assert.equal(rec.lifecycle, 'schedulable');
});

test('defect 3: an emptied partition releases its index handles; the partition cap is a configurable 429', async () => {
  const { core } = makeCore({}, { limits: { maxPartitions: 3 } });
  for (let m = 0; m < 3; m++) core.upsertWorker(worker(m + 1, { model_name: `m${m}` }));
  const before = snapshot(core);
  const err = await rejects(() => core.upsertWorker(worker(9, { model_name: 'm9' })), 429,
    /cannot create partition "m9\/default": partition limit reached \(current=3, limit=3\)/);
  assert.equal(err.code, 'SEL_PARTITION_LIMIT');
  assert.deepEqual(err.details, { limit_kind: 'partitions', current: 3, limit: 3 });
  assert.equal(core.limitRejections.partitions, 1);
  assert.equal(snapshot(core), before, 'nothing changed');
  // the only worker of a partition may move: its old partition is freed by the move
  assert.equal(core.upsertWorker(worker(3, { model_name: 'm9' })).lifecycle, 'schedulable');
  assert.equal(core.partitionList().length, 3);
  core.deleteWorker(1n);
  assert.equal(core.partition('m0', 'default'), undefined, 'the emptied partition is gone');
  assert.equal(core.upsertWorker(worker(10, { model_name: 'm10' })).lifecycle, 'schedulable');
});

test('defect 3: more partitions over time than the wasm has index handles, and new block sizes after emptying', () => {
  const { core } = makeCore();
  for (let m = 0; m < LIMITS.wasmIndexHandles + 100; m++) {
    assert.equal(core.upsertWorker(worker(1, { model_name: `model-${m}` })).lifecycle, 'schedulable', `model ${m}`);
  }
  assert.equal(core.partitionList().length, 1);
  core.deleteWorker(1n);
  assert.equal(core.partitionList().length, 0);
  // a partition's block size is fixed while it exists; recreated, it may take another
  core.upsertWorker(worker(1, { block_size: 16 }));
  core.upsertWorker(worker(2, { block_size: 16 }));
  assert.match(core.upsertWorker(worker(3, { block_size: 32 })).not_schedulable_reasons?.[0] ?? '', /has block_size 16, but 32 was requested/);
  core.deleteWorker(1n);
  core.deleteWorker(2n);
  assert.equal(core.patchWorker(3n, {}).lifecycle, 'schedulable');
  assert.equal(core.partition('model', 'default')?.blockSize, 32);
  // the only worker of a partition re-registering with another block size recreates it
  assert.equal(core.upsertWorker(worker(3, { block_size: 64 })).lifecycle, 'schedulable');
  assert.equal(core.partition('model', 'default')?.blockSize, 64);
});

test('defect 3: --max-partitions is checked against the wasm index handles', () => {
  assert.throws(() => makeCore({}, { limits: { maxPartitions: LIMITS.wasmIndexHandles + 1 } }), /--max-partitions: must be an integer between 1 and 4096/);
  assert.throws(() => makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true', DYN_ROUTER_PREDICTED_TTL_SECS: '5' }, { limits: { maxPartitions: 3000 } }),
    /--max-partitions: must be an integer between 1 and 2048/);
  assert.throws(() => makeCore({}, { limits: { maxBookings: 0 } }), /--max-bookings/);
  assert.throws(() => makeCore({}, { limits: { maxPromptBlocks: 1.5 } }), /--max-prompt-blocks/);
});

test('defect 5: a prompt over --max-prompt-blocks is a 422 before any hashing', async () => {
  const { core } = makeCore({}, { limits: { maxPromptBlocks: 8 } });
  core.upsertWorker(worker(1, { block_size: 1 }));
  const before = snapshot(core);
  const over = Array.from({ length: 9 }, (_, i) => i);
  const err = await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'big', token_ids: over }), 422,
    /token_ids: 9 blocks of 1 tokens is over the limit of 8 blocks per prompt \(--max-prompt-blocks\)/);
  assert.equal(err.code, 'SEL_UNPROCESSABLE');
  await rejects(() => core.select({ model_name: 'model', mm_routing_info: { routing_token_ids: over } }), 422, /mm_routing_info.routing_token_ids: 9 blocks/);
  await rejects(() => core.potentialLoads({ model_name: 'model', token_ids: over }), 422, /over the limit of 8 blocks/);
  await rejects(() => core.overlapScores({ model_name: 'model', token_ids: over }), 422, /over the limit of 8 blocks/);
  const hashes = Array.from({ length: 9 }, (_, i) => i + 1);
  await rejects(() => core.select({ model_name: 'model', block_hashes: hashes, sequence_hashes: hashes, isl_tokens: 9 }), 422, /sequence_hashes: 9 blocks/);
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'x', worker_id: 1, sequence_hashes: hashes, isl_tokens: 9 }), 422,
    /sequence_hashes: 9 blocks/);
  assert.equal(core.limitRejections.promptBlocks, 6);
  assert.equal(snapshot(core), before, 'nothing changed');
  assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: 'ok', token_ids: over.slice(0, 8) })).worker_id, 1n);
});

test('defect 5: the default prompt limit is lower where bookings are also indexed', () => {
  assert.equal(makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true' }).core.limits.maxPromptBlocks, LIMITS.defaultMaxPromptBlocks);
  assert.equal(makeCore().core.limits.maxPromptBlocks, LIMITS.defaultMaxPromptBlocksRecorded);
  assert.equal(makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true', DYN_ROUTER_PREDICTED_TTL_SECS: '5' }).core.limits.maxPromptBlocks,
    LIMITS.defaultMaxPromptBlocksRecorded);
});

test('defect 9: live bookings are capped with a 429, counted, and free again after a DELETE', async () => {
  const { core } = makeCore({}, { limits: { maxBookings: 2 } });
  core.upsertWorker(worker(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: TOKENS });
  await core.select({ model_name: 'model', selection_id: 'b', token_ids: TOKENS });
  await core.createReservation({ model_name: 'model', selection_id: 'b' });
  const before = snapshot(core);
  const err = await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'c', token_ids: TOKENS }), 429,
    /live booking limit reached \(current=2, limit=2\)/);
  assert.equal(err.code, 'SEL_BOOKING_LIMIT');
  assert.deepEqual(err.details, { limit_kind: 'bookings', current: 2, limit: 2 });
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'd', worker_id: 1, token_ids: TOKENS }), 429);
  await core.select({ model_name: 'model', selection_id: 'e', token_ids: TOKENS });
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'e' }), 429);
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: TOKENS }), 409, /already reserved/);
  // a peer's admission at the cap is dropped and counted too
  assert.equal(core.applyReplicaEvent({ modelName: 'model', routingGroup: 'default', blockSize: 4, requestId: 'peer', workerId: 1n, dpRank: 0,
    loraName: null, kind: 'add', seq: new BigUint64Array(0), trackPrefillTokens: false, expectedOutputTokens: null, prefillTokens: 0 }), false);
  assert.equal(core.limitRejections.bookings, 4);
  assert.equal(snapshot(core), before, 'nothing changed');
  core.freeReservation('a');
  assert.equal((await core.createReservation({ model_name: 'model', selection_id: 'e' })).worker_id, 1n, 'room again after a free');
});

test('wire: advisory worker_load without max_num_batched_tokens answers Dynamo\'s default capacity and prefill_busy', async () => {
  const { core } = makeCore({ DYN_ROUTER_CONDITIONAL_DISAGG_PREFILL_BUSY_THRESHOLD: '0.5' });
  core.upsertWorker(worker(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: TOKENS });
  const r = await core.select({ model_name: 'model', token_ids: TOKENS, advisory: true });
  assert.deepEqual(r.worker_load, { active_prefill_tokens: 16, prefill_token_capacity: 10_000_000, prefill_busy: false });
  const plain = makeCore().core;
  plain.upsertWorker(worker(1));
  assert.deepEqual((await plain.select({ model_name: 'model', token_ids: TOKENS, advisory: true })).worker_load,
    { active_prefill_tokens: 0, prefill_token_capacity: 10_000_000 });
});

test('wire: an empty kv_events_endpoints map is omitted from worker records, a filled one kept', () => {
  const { core } = makeCore();
  assert.ok(!('kv_events_endpoints' in core.upsertWorker(worker(1))));
  const rec = core.upsertWorker(worker(2, { kv_events_endpoints: { 1: 'tcp://h:2', 0: 'tcp://h:1' } }));
  assert.deepEqual(rec.kv_events_endpoints, { 0: 'tcp://h:1', 1: 'tcp://h:2' });
  assert.deepEqual(Object.keys(rec).slice(0, 7),
    ['worker_id', 'model_name', 'routing_group', 'endpoint', 'kv_events_endpoint', 'kv_events_endpoints', 'replay_endpoint']);
});

test('wire: allowed_worker_ids [] allows no worker (503), and a pin outside it is a 400', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const before = snapshot(core);
  const err = await rejects(() => core.select({ model_name: 'model', token_ids: TOKENS, allowed_worker_ids: [] }), 503, 'no eligible workers for the request');
  assert.equal(err.code, 'SEL_NO_ENDPOINTS');
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'x', token_ids: TOKENS, allowed_worker_ids: [] }), 503);
  await rejects(() => core.select({ model_name: 'model', token_ids: TOKENS, allowed_worker_ids: [], pinned_worker: { worker_id: 1, dp_rank: 0 } }), 400,
    'pinned worker 1 is not in allowed worker set');
  assert.equal(snapshot(core), before);
  assert.equal((await core.select({ model_name: 'model', token_ids: TOKENS, allowed_worker_ids: [1] })).worker_id, 1n);
});

test('wire: DYN_ROUTER_TRACK_ACTIVE_BLOCKS=false is ignored as in Dynamo\'s selection service: the response and /loads agree', async () => {
  const { core } = makeCore({ DYN_ROUTER_TRACK_ACTIVE_BLOCKS: 'false' });
  assert.ok(core.warnings.some((w) => /DYN_ROUTER_TRACK_ACTIVE_BLOCKS=false has no effect/.test(w)));
  core.upsertWorker(worker(1));
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: TOKENS });
  assert.equal(r.potential_decode_blocks, 4);
  assert.equal(core.loads()[0].loads[0].potential_decode_blocks, 4, 'what the response projected is what /loads shows');
  core.addOutputBlock('a', {});
  assert.equal(core.loads()[0].loads[0].potential_decode_blocks, 5);
});

test('wire: stride, remote indexer and replica-sync variables are reported as having no effect', () => {
  const { core } = makeCore({ DYN_ROUTER_ACTIVE_SEQUENCE_STRIDE: '4', DYN_USE_REMOTE_INDEXER: 'true', DYN_ROUTER_REPLICA_SYNC: 'true' });
  const text = core.warnings.join('\n');
  for (const v of ['DYN_ROUTER_ACTIVE_SEQUENCE_STRIDE', 'DYN_USE_REMOTE_INDEXER', 'DYN_ROUTER_REPLICA_SYNC']) assert.match(text, new RegExp(`${v} has no effect`));
  assert.equal(makeCore().core.warnings.length, 0);
});

test('wire: /overlap_scores merges the predicted side index into the device tier, as /select and /potential_loads do', async () => {
  const { core } = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true', DYN_ROUTER_PREDICTED_TTL_SECS: '60' });
  core.upsertWorker(worker(1, { kv_events_endpoint: 'tcp://127.0.0.1:1' }));
  core.upsertWorker(worker(2, { kv_events_endpoint: 'tcp://127.0.0.1:2' }));
  const locals = blockHashes(TOKENS, 4);
  const part = core.partition('model', 'default')!;
  // worker 1 holds the first block on the device tier and the second on the host tier
  part.index.stored(1n, 0, Tier.Device, null, [{ ext: 11n, local: locals[0] }]);
  part.index.stored(1n, 0, Tier.Host, 11n, [{ ext: 12n, local: locals[1] }]);
  // a booking on worker 2 is recorded into the side index only
  await core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: TOKENS, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  const scores = core.overlapScores({ model_name: 'model', token_ids: TOKENS });
  const [w1, w2] = scores.workers;
  assert.deepEqual([w1.device_blocks, w1.host_pinned_extension_blocks], [1, 1]);
  assert.equal(w1.router_credit_blocks, 1 + 0.75);
  assert.equal(w2.device_blocks, 4, 'the predicted booking counts as device overlap');
  assert.equal(w2.router_credit_blocks, 4);
  const loads = core.potentialLoads({ model_name: 'model', token_ids: TOKENS });
  assert.equal(loads.find((l) => l.worker_id === 2n)?.potential_prefill_tokens, 16, 'the booked prefill only: the side match credits the prompt');
  const pick = await core.select({ model_name: 'model', token_ids: TOKENS, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.equal(pick.overlap.gpu, 16, 'select sees the same device overlap');
  assert.equal(pick.effective_prefill_tokens, 0);
});

test('wire: the predicted side index raises the device match but keeps the primary\'s lower tiers', () => {
  const { core } = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true', DYN_ROUTER_PREDICTED_TTL_SECS: '60' });
  core.upsertWorker(worker(1, { kv_events_endpoint: 'tcp://127.0.0.1:1' }));
  const locals = blockHashes(TOKENS, 4);
  const part = core.partition('model', 'default')!;
  part.index.stored(1n, 0, Tier.Device, null, [{ ext: 11n, local: locals[0] }]);
  part.index.stored(1n, 0, Tier.Host, 11n, [{ ext: 12n, local: locals[1] }]);
  part.predicted!.record(1n, 0, BigUint64Array.from(locals.slice(0, 3)));
  const [row] = core.overlapScores({ model_name: 'model', token_ids: TOKENS }).workers;
  assert.deepEqual([row.device_blocks, row.host_pinned_extension_blocks, row.host_pinned_blocks], [3, 1, 4]);
  assert.equal(row.router_credit_blocks, 3 + 0.75);
});

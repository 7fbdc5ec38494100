/**
 * Indexing modes (Dynamo `lib/kv-router/src/services/selection/README.md`): bookings populate the approximate primary without KV events (TTL
 * retention); query-only selects and hash-only explicit reservations are never recorded; the
 * event-driven primary never records; a predicted side index is merged per worker by max.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCore, worker } from './core-helpers.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { blockHashes, sequenceHashes } from '../../../src/core/index/hashing.js';

const tokens = Array.from({ length: 16 }, (_, i) => i + 1);
const gpu = async (core: ReturnType<typeof makeCore>['core'], w: number) =>
  core.overlapScores({ model_name: 'model', token_ids: tokens }).workers.find((r) => r.worker_id === BigInt(w))!.device_blocks;

test('bookings populate the approximate primary; query selects do not; TTL expires them', async () => {
  const { core, clock } = makeCore();
  core.upsertWorker(worker(1));
  core.upsertWorker(worker(2));
  await core.select({ model_name: 'model', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.equal(await gpu(core, 2), 0, 'query-only select records nothing');
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: tokens, pinned_worker: { worker_id: 2, dp_rank: 0 } });
  assert.equal(await gpu(core, 2), 4);
  assert.equal(await gpu(core, 1), 0);
  core.prefillComplete('a'); // else worker 2's booked prefill ties the cost with idle worker 1
  const next = await core.select({ model_name: 'model', token_ids: tokens });
  assert.equal(next.worker_id, 2n, 'the recorded prefix attracts the next request');
  assert.equal(next.overlap.gpu, 16);
  clock.advanceSecs(121);
  assert.equal(await gpu(core, 2), 0, 'expired after router_ttl_secs');
});

test('replayed and explicit bookings with tokens or block hashes are recorded; hash-only explicit ones are not', async () => {
  const { core } = makeCore();
  core.upsertWorker(worker(1));
  const seq = sequenceHashes(blockHashes(tokens, 4));
  await core.createReservation({ model_name: 'model', selection_id: 'h', worker_id: 1, sequence_hashes: seq, isl_tokens: 16 });
  assert.equal(await gpu(core, 1), 0);
  await core.createReservation({ model_name: 'model', selection_id: 'b', worker_id: 1, block_hashes: blockHashes(tokens, 4), sequence_hashes: seq, isl_tokens: 16 });
  assert.equal(await gpu(core, 1), 4);
  const { core: c2 } = makeCore();
  c2.upsertWorker(worker(1));
  await c2.select({ model_name: 'model', selection_id: 's', token_ids: tokens });
  assert.equal(await gpu(c2, 1), 0);
  await c2.createReservation({ model_name: 'model', selection_id: 's' });
  assert.equal(await gpu(c2, 1), 4);
});

test('the event-driven primary never records bookings; a predicted side index does and is merged by max', async () => {
  const ev = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true' }).core;
  ev.upsertWorker(worker(1, { kv_events_endpoint: 'tcp://127.0.0.1:5001' }));
  await ev.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: tokens });
  assert.equal(await gpu(ev, 1), 0);

  const { core, clock } = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true', DYN_ROUTER_PREDICTED_TTL_SECS: '30' });
  core.upsertWorker(worker(1, { kv_events_endpoint: 'tcp://127.0.0.1:5001' }));
  core.upsertWorker(worker(2, { kv_events_endpoint: 'tcp://127.0.0.1:5002' }));
  const locals = blockHashes(tokens, 4);
  core.partition('model', 'default')!.index.stored(1n, 0, Tier.Device, null, [{ ext: 1n, local: locals[0] }]);
  await core.selectAndReserve({ model_name: 'model', selection_id: 'p', token_ids: tokens, pinned_worker: { worker_id: 1, dp_rank: 0 } });
  const r = await core.select({ model_name: 'model', token_ids: tokens });
  assert.equal(r.worker_id, 1n);
  assert.equal(r.overlap.gpu, 16, 'max of primary (1 block) and side index (4 blocks)');
  clock.advanceSecs(31);
  const r2 = await core.select({ model_name: 'model', token_ids: tokens, pinned_worker: { worker_id: 1, dp_rank: 0 } });
  assert.equal(r2.overlap.gpu, 4, 'side index expired; the event-driven block remains');
});

test('lru with KV events is a start-up error; without them it falls back to TTL with a warning', () => {
  assert.throws(() => makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true', DYN_ROUTER_APPROXIMATE_CACHE_POLICY: 'lru' }), /lru/);
  const { core } = makeCore({ DYN_ROUTER_APPROXIMATE_CACHE_POLICY: 'lru' });
  assert.match(core.warnings.join('\n'), /lru.*TTL/);
});

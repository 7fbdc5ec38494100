/**
 * What the core reports for observability: the `onSelection` hook (route, partition, outcome,
 * booked overlap), the feed's expectation on prefill completion, and the `kv_events` / `kv_feeds`
 * fields built from a feed that describes its ranks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FeedPartition, IndexFeed, KvFeedStatus } from '../../../src/core/index/feed.js';
import type { SelectionEvent } from '../../../src/core/options.js';
import { blockHashes } from '../../../src/core/index/hashing.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { parsePolicyConfig } from '../../../src/core/select/policy-config.js';
import { QUEUE_LIMIT_POLICY, makeCore, rejects, worker } from './core-helpers.js';

const toks = (n: number, base = 0): number[] => Array.from({ length: n }, (_, i) => base + i + 1);

/** A feed that records what the core tells it and describes each rank as `live`. */
class RecordingFeed implements IndexFeed {
  readonly expected: [bigint, number, number, number][] = [];
  readonly ranks = new Map<bigint, ReadonlyMap<number, string>>();
  refuse: string | null = null;
  reconcile(_p: FeedPartition, workerId: bigint, ranks: ReadonlyMap<number, string>): void {
    if (this.refuse !== null) throw new Error(this.refuse);
    this.ranks.set(workerId, ranks);
  }
  detach(workerId: bigint): void { this.ranks.delete(workerId); }
  describe(workerId: bigint): KvFeedStatus[] {
    return [...(this.ranks.get(workerId) ?? [])].map(([dp_rank, endpoint]) => ({
      dp_rank, endpoint, state: 'live', last_event_age_secs: 1, batches: 1, blocks_stored: 2, blocks_removed: 0, dropped: 0, gaps: 0,
      block_size_mismatches: 0,
    }));
  }
  expectBlocks(workerId: bigint, dpRank: number, blocks: number, bookedAt: number): void { this.expected.push([workerId, dpRank, blocks, bookedAt]); }
}

function observedCore(env: Record<string, string> = {}) {
  const events: SelectionEvent[] = [];
  const made = makeCore(env, { hooks: { onSelection: (e) => events.push(e) } });
  return { ...made, events };
}

test('onSelection reports route, partition and outcome of every selection and booking', async () => {
  const { core, events } = observedCore();
  core.upsertWorker(worker(1));
  await core.select({ model_name: 'model', token_ids: toks(8) });
  await core.select({ model_name: 'model', selection_id: 's1', token_ids: toks(8) });
  await core.createReservation({ model_name: 'model', selection_id: 's1' });
  await core.selectAndReserve({ model_name: 'model', selection_id: 's2', token_ids: toks(8) });
  await core.createReservation({ model_name: 'model', selection_id: 's3', worker_id: 1, token_ids: toks(8) });
  await rejects(() => core.select({ model_name: 'nope', token_ids: toks(8) }), 503);
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 's2', token_ids: toks(8) }), 409);
  await rejects(() => core.select({ model_name: 'model' }), 400);
  await rejects(() => core.select({ model_name: 5, token_ids: toks(4) }), 422);

  const summary = events.map((e) => `${e.route} ${e.modelName}/${e.routingGroup} ${e.outcome}${e.booked ? ' booked' : ''}`);
  assert.deepEqual(summary, [
    'select model/default ok',
    'select model/default ok',
    'reservations model/default ok booked', // the replay of a cached /select: the router's choice
    'select_and_reserve model/default ok booked',
    'reservations model/default ok', // explicit: the client chose the worker
    'select / rejected', // 503, and the unknown model stays out of the labels
    'select_and_reserve model/default error', // 409
    'select model/default error', // 400
    'select / error', // 422 before any partition is known
  ]);
  for (const e of events) assert.ok(e.seconds >= 0 && e.seconds < 60, `${e.route} duration ${e.seconds}`);
});

test('a booked event carries the chosen rank\'s device overlap and the prompt length', async () => {
  const { core, events } = observedCore();
  core.upsertWorker(worker(1));
  const [h0, h1] = blockHashes(toks(8), 4);
  core.partition('model', 'default')!.index.stored(1n, 0, Tier.Device, null, [{ ext: 1n, local: h0 }, { ext: 2n, local: h1 }]);
  const res = await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(10) });
  assert.equal(res.overlap.gpu, 8);
  assert.deepEqual(events[0].booked, { workerId: 1n, dpRank: 0, deviceOverlapTokens: 8, islTokens: 10 });
});

test('a queue-limit rejection (429) is `rejected`', async () => {
  const events: SelectionEvent[] = [];
  const { core } = makeCore({}, { policyConfig: parsePolicyConfig(QUEUE_LIMIT_POLICY), hooks: { onSelection: (e) => events.push(e) } });
  core.upsertWorker(worker(1, { max_num_batched_tokens: 4 }));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'l', token_ids: toks(4, 9) }, { policyClass: 'latency' }), 429);
  assert.deepEqual(events.map((e) => e.outcome), ['ok', 'rejected']);
});

test('prefill completion tells the feed how many uncached blocks to expect, once per booking', async () => {
  const feed = new RecordingFeed();
  const { core, clock } = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true' }, { feed });
  core.upsertWorker(worker(1, { kv_events_endpoint: 'tcp://127.0.0.1:1' }));
  clock.advance(500);
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(10) }); // 2 full blocks of 4
  await core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: toks(3) }); // no full block
  clock.advance(2000);
  core.prefillComplete('a');
  core.prefillComplete('a'); // a repeat expects nothing more
  core.prefillComplete('b');
  assert.deepEqual(feed.expected, [[1n, 0, 2, 500]]);
});

test('worker records carry kv_events from the feed; a refused endpoint shows its ranks in error; /ready counts states', () => {
  const feed = new RecordingFeed();
  const { core } = makeCore({ DYN_ROUTER_USE_KV_EVENTS: 'true' }, { feed });
  const rec = core.upsertWorker(worker(1, { kv_events_endpoint: 'tcp://127.0.0.1:1' }));
  assert.deepEqual(rec.kv_events?.map((f) => [f.dp_rank, f.endpoint, f.state]), [[0, 'tcp://127.0.0.1:1', 'live']]);

  feed.refuse = 'invalid kv_events endpoint for worker 2 dp_rank 0: bad host';
  const bad = core.upsertWorker(worker(2, { kv_events_endpoint: 'tcp://bad:1' }));
  assert.equal(bad.lifecycle, 'incomplete');
  assert.deepEqual(bad.kv_events, [{
    dp_rank: 0, endpoint: 'tcp://bad:1', state: 'error', last_event_age_secs: null, batches: 0, blocks_stored: 0, blocks_removed: 0,
    dropped: 0, gaps: 0, block_size_mismatches: 0, reason: 'invalid kv_events endpoint for worker 2 dp_rank 0: bad host',
  }]);
  feed.refuse = null;

  const ready = core.ready();
  assert.deepEqual(ready.kv_feeds, { connecting: 0, connected: 0, live: 1, silent: 0, disconnected: 0, error: 1 });
  assert.equal(ready.ready, true, 'an unhealthy feed does not change readiness');
  assert.deepEqual(core.deleteWorker(1n).kv_events, [], 'a deleted worker has no feeds left');
});

test('without KV events there is no kv_events field and no kv_feeds count (Dynamo\'s shapes)', () => {
  const { core } = makeCore();
  assert.equal('kv_events' in core.upsertWorker(worker(1)), false);
  assert.equal('kv_feeds' in core.ready(), false);
});

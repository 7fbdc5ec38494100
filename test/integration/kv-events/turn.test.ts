/**
 * The ingestion turn (`--kv-events-turn-ms`, the service builder's `kvEvents({ yieldBudgetMs })`):
 * with the shortest turn a real service behind a real ZMQ PUB still applies every batch in order
 * while a client keeps selecting, two engines' long batches are applied in interleaved slices
 * without mixing them up, and a turn out of bounds stops the build with a message naming them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionServiceBuilder } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { MAX_KV_TURN_MS, MIN_KV_TURN_MS } from '../../../src/service/kv-events/ingress.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { pack, removedEvent, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { MODEL, counters, selectOverlap, until, workerBody } from '../../support/kv-service.js';

test('the shortest ingestion turn: every batch applied in order while selections run in between', async (t) => {
  const engine = await FakeEngine.start();
  const service = await new SelectionServiceBuilder(parseRouterConfig({})).kvEvents({ yieldBudgetMs: MIN_KV_TURN_MS }).build();
  t.after(async () => { await service.shutdown(); engine.close(); });
  service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint }));
  await engine.waitForSubscribers();
  // 300 batches, each continuing the chain by one 16-token block (a batch out of order would miss its parent)
  const N = 300, tokens = tokenRange(1, 16 * N);
  for (let i = 0; i < N; i++) {
    await engine.publish(i, pack([i, [storedEvent([1000 + i], i === 0 ? null : 999 + i, tokens.slice(16 * i, 16 * (i + 1)))]]));
  }
  let selections = 0;
  while (counters(service, 1).batchesApplied < N) {
    await service.select({ model_name: MODEL, token_ids: tokens.slice(0, 64) });
    selections++;
    await new Promise((r) => setImmediate(r));
  }
  await until(service, 1, (c) => c.batchesApplied === N, 'every batch applied');
  const c = counters(service, 1);
  assert.deepEqual([c.blocksStored, c.parentNotFound, c.gaps, c.staleBatches], [N, 0, 0, 0]);
  assert.ok(selections > 0, 'selections ran while ingesting');
  assert.deepEqual(await selectOverlap(service, tokens), { gpu: N, cpu: N }); // cpu counts device blocks too
});

test('long batches of two engines, applied in slices of the shortest turn, interleave without mixing', async (t) => {
  const engines = [await FakeEngine.start(), await FakeEngine.start()];
  const service = await new SelectionServiceBuilder(parseRouterConfig({})).kvEvents({ yieldBudgetMs: MIN_KV_TURN_MS }).build();
  t.after(async () => { await service.shutdown(); for (const e of engines) e.close(); });
  engines.forEach((e, w) => service.upsertWorker(workerBody(w + 1, { kv_events_endpoint: e.endpoint })));
  for (const e of engines) await e.waitForSubscribers();
  // batch i of worker w: a fresh 64-block chain, one event per block, then the previous chain's
  // blocks removed one event each, deepest first: 128 events, each needing the right hashes
  const N = 30, B = 64;
  const id = (w: number, i: number, k: number): number => (w + 1) * 1_000_000 + i * 1000 + k;
  const tokens = (w: number, i: number): number[] => tokenRange((w + 1) * 10_000_000 + i * 10_000, 16 * B);
  const payload = (w: number, i: number): Uint8Array => {
    const t0 = tokens(w, i), events: unknown[] = [];
    for (let k = 0; k < B; k++) events.push(storedEvent([id(w, i, k)], k === 0 ? null : id(w, i, k - 1), t0.slice(16 * k, 16 * (k + 1))));
    if (i > 0) for (let k = B - 1; k >= 0; k--) events.push(removedEvent([id(w, i - 1, k)]));
    return pack([i, events]);
  };
  for (let i = 0; i < N; i++) for (let w = 0; w < 2; w++) await engines[w].publish(i, payload(w, i));
  for (const w of [1, 2]) await until(service, w, (c) => c.batchesApplied === N, `worker ${w}: every batch applied`);
  for (const w of [1, 2]) {
    const c = counters(service, w);
    assert.deepEqual([c.blocksStored, c.blocksRemoved, c.unknownRemoved, c.parentNotFound, c.storesStopped, c.gaps],
      [N * B, (N - 1) * B, 0, 0, 0, 0], `worker ${w}`);
  }
  assert.deepEqual(await selectOverlap(service, tokens(0, N - 1)), { gpu: B, cpu: B });
  assert.deepEqual(await selectOverlap(service, tokens(1, N - 2)), { gpu: 0, cpu: 0 }); // removed
});

test('an ingestion turn out of bounds stops the build, naming the bounds', async () => {
  for (const bad of [0, MIN_KV_TURN_MS / 2, MAX_KV_TURN_MS + 1, Number.NaN]) {
    await assert.rejects(new SelectionServiceBuilder(parseRouterConfig({})).kvEvents({ yieldBudgetMs: bad }).build(),
      new RegExp(`between ${MIN_KV_TURN_MS} and ${MAX_KV_TURN_MS} ms`));
  }
});

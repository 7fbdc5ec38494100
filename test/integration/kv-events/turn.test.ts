/**
 * The ingestion turn (`--kv-events-turn-ms`, the service builder's `kvEvents({ yieldBudgetMs })`):
 * with the shortest turn a real service behind a real ZMQ PUB still applies every batch in order
 * while a client keeps selecting, and a turn out of bounds stops the build with a message naming them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionServiceBuilder } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { MAX_KV_TURN_MS, MIN_KV_TURN_MS } from '../../../src/service/kv-events/ingress.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { pack, storedEvent, tokenRange } from '../../support/kv-batches.js';
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

test('an ingestion turn out of bounds stops the build, naming the bounds', async () => {
  for (const bad of [0, MIN_KV_TURN_MS / 2, MAX_KV_TURN_MS + 1, Number.NaN]) {
    await assert.rejects(new SelectionServiceBuilder(parseRouterConfig({})).kvEvents({ yieldBudgetMs: bad }).build(),
      new RegExp(`between ${MIN_KV_TURN_MS} and ${MAX_KV_TURN_MS} ms`));
  }
});

/**
 * Start-up order (Dynamo `lib/kv-router/src/services/indexer/recovery.rs`): listeners registered before the indexer is ready connect at once
 * (the publisher sees them) but apply nothing until `setIndexerReady()`; then they drain what ZMQ
 * queued for them, in order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine } from '../../support/fake-engine.js';
import { batch, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { counters, listeningWorker, selectOverlap, until, workerBody } from '../../support/kv-service.js';
import { SelectionServiceBuilder } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { ZmqKvIngress } from '../../../src/service/kv-events/ingress.js';

const P = tokenRange(1000, 32);

test('listeners connected before start-up recovery apply only after setIndexerReady', async (t) => {
  const engine = await FakeEngine.start();
  const ingress = new ZmqKvIngress();
  const service = await new SelectionServiceBuilder(parseRouterConfig({})).feed(ingress).build();
  t.after(async () => { await service.shutdown(); await ingress.close(); engine.close(); });
  service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint }));
  await engine.waitForSubscribers();
  await engine.publish(0, batch([storedEvent([1n], null, P.slice(0, 16))]));
  await engine.publish(1, batch([storedEvent([2n], 1n, P.slice(16))]));
  await new Promise((r) => setTimeout(r, 200)); // time to (wrongly) apply, if the gate leaked
  assert.equal(counters(ingress, 1).batchesApplied, 0);
  assert.deepEqual(await selectOverlap(service, P), { gpu: 0, cpu: 0 });

  ingress.setIndexerReady();
  await until(ingress, 1, (c) => c.batchesApplied === 2, 'the queued batches');
  assert.deepEqual(await selectOverlap(service, P), { gpu: 2, cpu: 2 });
  assert.equal(counters(ingress, 1).gaps, 0);
});

test('the builder signals readiness itself when it owns the ingress', async (t) => {
  const { engine, service } = await listeningWorker(t);
  await engine.publish(0, batch([storedEvent([1n, 2n], null, P)]));
  await until(service, 1, (c) => c.batchesApplied === 1, 'applied without a manual signal');
});

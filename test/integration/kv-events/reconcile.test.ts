/**
 * Catalog integration over real sockets (Dynamo `lib/kv-router/src/services/selection/catalog.rs`, `lib/kv-router/src/services/selection/tests.rs`): rank-by-rank reconcile,
 * the restarted-publisher rule, invalid endpoints rolled back, ranks and workers kept apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine } from '../../support/fake-engine.js';
import { batch, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { counters, dumpedBlocks, kvService, listeningWorker, rankOverlaps, selectOverlap, until, workerBody } from '../../support/kv-service.js';

const P = tokenRange(1000, 32), Q = tokenRange(2000, 32), X = tokenRange(3000, 32);
/** A batch storing a 2-block prompt from the root under engine hashes h, h+1. */
const storeAll = (tokens: number[], h: number, dpRank: number | null = null, medium = 'GPU') =>
  batch([storedEvent([BigInt(h), BigInt(h + 1)], null, tokens, { medium })], dpRank);

test('an unchanged re-POST keeps blocks and watermark; a changed endpoint starts fresh', async (t) => {
  const { engine: e1, service, body } = await listeningWorker(t);
  const e2 = await FakeEngine.start();
  t.after(async () => e2.close());
  await e1.publish(0, storeAll(P, 10));
  await until(service, 1, (c) => c.batchesApplied === 1, 'first batch');

  assert.equal(service.upsertWorker(body).lifecycle, 'schedulable');
  assert.equal(service.ingressStats(1n)?.ranks[0].watermark, 0n);
  assert.deepEqual(await selectOverlap(service, P), { gpu: 2, cpu: 2 });
  await e1.publish(1, batch([storedEvent([20n], null, Q.slice(0, 16))]));
  await until(service, 1, (c) => c.batchesApplied === 2, 'second batch on the kept listener');
  assert.equal(counters(service, 1).gaps, 0);

  service.upsertWorker({ ...body, kv_events_endpoint: e2.endpoint });
  assert.deepEqual(dumpedBlocks(service), [], 'the changed rank dropped its blocks');
  assert.equal(service.ingressStats(1n)?.ranks[0].watermark, null);
  await e2.waitForSubscribers();
  await e2.publish(0, storeAll(X, 30));
  await until(service, 1, (c) => c.batchesApplied === 3, 'first batch of the new publisher');
  assert.deepEqual(await selectOverlap(service, X), { gpu: 2, cpu: 2 });
  assert.deepEqual(await selectOverlap(service, P), { gpu: 0, cpu: 0 });
  assert.equal(counters(service, 1).gaps, 0);
});

test('a publisher restarted at the same address: re-POST keeps the stale watermark, DELETE then POST recovers', async (t) => {
  const { engine, service, body } = await listeningWorker(t);
  for (let s = 0; s < 3; s++) await engine.publish(s, batch([storedEvent([BigInt(100 + s)], s === 0 ? null : BigInt(99 + s), P.slice(0, 16))]));
  await until(service, 1, (c) => c.batchesApplied === 3, 'history of the first process');

  await engine.restart(); // seqs start at 0 again
  await engine.waitForSubscribers(); // the SUB reconnected by itself
  await engine.publish(0, storeAll(X, 200));
  await until(service, 1, (c) => c.staleBatches === 1, 'seq 0 of the new process is stale');
  service.upsertWorker(body);
  await engine.publish(1, storeAll(Q, 300));
  await until(service, 1, (c) => c.staleBatches === 2, 're-POST kept the stale watermark');
  assert.deepEqual(await selectOverlap(service, X), { gpu: 0, cpu: 0 });

  service.deleteWorker(1n);
  assert.equal(service.ingressStats(1n), null);
  service.upsertWorker(body);
  await engine.waitForSubscribers(2);
  await engine.publish(2, storeAll(X, 400));
  await until(service, 1, (c) => c.batchesApplied === 1, 'the fresh listener applies');
  assert.deepEqual(await selectOverlap(service, X), { gpu: 2, cpu: 2 });
  assert.deepEqual([counters(service, 1).gaps, counters(service, 1).batchesLost], [1, 2]);
});

test('an invalid endpoint leaves the worker incomplete with nothing registered; PATCH fixes it', async (t) => {
  const [e0, e1] = [await FakeEngine.start(), await FakeEngine.start()];
  const service = await kvService();
  t.after(async () => { await service.shutdown(); e0.close(); e1.close(); });
  const rec = service.upsertWorker(workerBody(7, { data_parallel_size: 2, kv_events_endpoints: { 0: e0.endpoint, 1: 'not-a-zmq-endpoint' } }));
  assert.equal(rec.lifecycle, 'incomplete');
  assert.deepEqual(rec.not_schedulable_reasons, ['reconciliation failed: invalid kv_events endpoint for worker 7 dp_rank 1: missing scheme']);
  assert.equal(service.ingressStats(7n), null, 'rank 0 was rolled back');

  const fixed = service.patchWorker(7n, { kv_events_endpoints: { 0: e0.endpoint, 1: e1.endpoint } });
  assert.equal(fixed.lifecycle, 'schedulable');
  assert.deepEqual(service.ingressStats(7n)?.ranks.map((r) => r.endpoint), [e0.endpoint, e1.endpoint]);
  await Promise.all([e0.waitForSubscribers(), e1.waitForSubscribers()]);
  await e0.publish(0, storeAll(P, 10));
  await until(service, 7, (c) => c.batchesApplied === 1, 'rank 0 applies');

  // a schedulable worker re-POSTed with a bad endpoint stops listening and loses its blocks
  const broken = service.patchWorker(7n, { kv_events_endpoints: { 0: 'tcp://127.0.0.1:notaport', 1: e1.endpoint } });
  assert.match(broken.not_schedulable_reasons?.[0] ?? '', /^reconciliation failed: invalid kv_events endpoint for worker 7 dp_rank 0: /);
  assert.equal(service.ingressStats(7n), null);
  assert.deepEqual(dumpedBlocks(service), []);

  const reasons = (extra: Record<string, unknown>) => service.upsertWorker(workerBody(8, extra)).not_schedulable_reasons;
  assert.deepEqual(reasons({ data_parallel_size: 2, kv_events_endpoints: { 0: e0.endpoint } }), ['kv_events endpoint is required for dp_rank 1']);
  assert.deepEqual(reasons({ data_parallel_size: 2, kv_events_endpoints: { 0: e0.endpoint, 1: e1.endpoint }, replay_endpoint: e0.endpoint }),
    ['replay_endpoint is supported only for data_parallel_size 1']);
  assert.deepEqual(reasons({ kv_events_endpoint: e0.endpoint, replay_endpoint: 'udp://x' }),
    ['reconciliation failed: invalid replay endpoint for worker 8: unsupported scheme `udp`']);
});

test('two ranks of one worker and a second worker, on separate endpoints, stay apart', async (t) => {
  const [e0, e1, e2] = [await FakeEngine.start(), await FakeEngine.start(), await FakeEngine.start()];
  const service = await kvService();
  t.after(async () => { await service.shutdown(); e0.close(); e1.close(); e2.close(); });
  service.upsertWorker(workerBody(1, { data_parallel_size: 2, kv_events_endpoints: { 0: e0.endpoint, 1: e1.endpoint } }));
  service.upsertWorker(workerBody(2, { kv_events_endpoint: e2.endpoint }));
  await Promise.all([e0.waitForSubscribers(), e1.waitForSubscribers(), e2.waitForSubscribers()]);
  await e0.publish(0, storeAll(P, 10));        // no rank in the batch: the listener's (0)
  await e1.publish(0, storeAll(Q, 20, 1));     // the batch names rank 1
  await e2.publish(0, batch([storedEvent([30n], null, P.slice(0, 16)), storedEvent([30n, 31n], null, P, { medium: 'CPU' })]));
  await until(service, 1, (c) => c.batchesApplied === 2, 'both ranks');
  await until(service, 2, (c) => c.batchesApplied === 1, 'worker 2');
  assert.deepEqual(rankOverlaps(service, P), { '1:0': [2, 2], '1:1': [0, 0], '2:0': [1, 2] }, 'the CPU copy counts in cpu, not gpu');
  assert.deepEqual(rankOverlaps(service, Q), { '1:0': [0, 0], '1:1': [2, 2], '2:0': [0, 0] });

  // shrinking worker 1 to rank 0 stops rank 1's listener and drops its blocks; rank 0 keeps its own
  service.upsertWorker(workerBody(1, { kv_events_endpoints: { 0: e0.endpoint } }));
  assert.deepEqual(service.ingressStats(1n)?.ranks.map((r) => r.dpRank), [0]);
  assert.deepEqual(rankOverlaps(service, P), { '1:0': [2, 2], '2:0': [1, 2] });
  assert.deepEqual(dumpedBlocks(service), ['device:10', 'device:11', 'device:30', 'host_pinned:30', 'host_pinned:31']);
});

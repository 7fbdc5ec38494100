/**
 * Defect 7 of issue 15 over real sockets: a batch naming a `data_parallel_rank` the worker does
 * not have is dropped and counted (`droppedFrames.unknownRank`), never indexed under that rank;
 * the stream goes on (the watermark moves past it), and a batch naming another rank of the same
 * worker is still applied under that rank.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine } from '../../support/fake-engine.js';
import { batch, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { counters, dumpedBlocks, kvService, listeningWorker, rankOverlaps, until, workerBody } from '../../support/kv-service.js';

const P = tokenRange(1000, 32), Q = tokenRange(2000, 32);
const storeTwo = (tokens: number[], h: number, dpRank: number | null) =>
  batch([storedEvent([BigInt(h)], null, tokens.slice(0, 16)), storedEvent([BigInt(h + 1)], BigInt(h), tokens.slice(16, 32))], dpRank);

test('defect 7: events naming a data_parallel_rank the worker does not have are dropped and counted', async (t) => {
  const { engine, service } = await listeningWorker(t); // one rank: 0
  await engine.publish(0, storeTwo(P, 10, 7));
  await until(service, 1, (c) => c.droppedFrames.unknownRank === 1, 'the stranger rank\'s batch dropped');
  assert.deepEqual(dumpedBlocks(service), [], 'nothing indexed');
  assert.equal(service.ingressStats(1n)?.ranks[0].watermark, 0n, 'the stream moved past the batch');
  await engine.publish(1, storeTwo(Q, 20, 0));
  await until(service, 1, (c) => c.batchesApplied === 1, 'a batch of its own rank');
  assert.deepEqual(rankOverlaps(service, Q), { '1:0': [2, 2] });
  const c = counters(service, 1);
  assert.deepEqual([c.gaps, c.batchesLost, c.droppedFrames.unknownRank], [0, 0, 1]);
});

test('defect 7: a batch naming another rank of the same worker is applied under it; ranks outside [start, start + size) are not', async (t) => {
  const [e2, e3] = [await FakeEngine.start(), await FakeEngine.start()];
  const service = await kvService();
  t.after(async () => { await service.shutdown(); e2.close(); e3.close(); });
  service.upsertWorker(workerBody(1, { data_parallel_start_rank: 2, data_parallel_size: 2, kv_events_endpoints: { 2: e2.endpoint, 3: e3.endpoint } }));
  await Promise.all([e2.waitForSubscribers(), e3.waitForSubscribers()]);
  await e2.publish(0, storeTwo(P, 10, 3)); // rank 2's publisher names rank 3: the worker's own
  await e2.publish(1, storeTwo(Q, 20, 0)); // rank 0 is not the worker's
  await until(service, 1, (c) => c.batchesApplied === 1 && c.droppedFrames.unknownRank === 1, 'one applied, one dropped');
  assert.deepEqual(rankOverlaps(service, P), { '1:2': [0, 0], '1:3': [2, 2] });
  assert.deepEqual(rankOverlaps(service, Q), { '1:2': [0, 0], '1:3': [0, 0] });
});

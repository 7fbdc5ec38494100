/**
 * Gaps over real sockets: the publisher's first batches go out before the listener is
 * connected (PUB drops them), so the listener's first batch has seq 3. With a replay ROUTER the
 * gap is filled (both reply shapes); without one it is counted and the stream goes on; a
 * replay endpoint that never answers is abandoned after the idle timeout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine, type ReplayShape } from '../../support/fake-engine.js';
import { fixtureLines } from '../../support/kv-batches.js';
import { counters, kvService, selectOverlap, until, workerBody } from '../../support/kv-service.js';
import { silentTcpEndpoint } from '../../support/ports.js';
import { SelectionServiceBuilder } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { ZmqKvIngress } from '../../../src/service/kv-events/ingress.js';

const lines = fixtureLines('v026-array-batch.jsonl');
const payload = (i: number) => Buffer.from(lines[i].payload_hex, 'hex');
const A = [...(lines[0].fields.events[0].token_ids as number[]), ...(lines[3].fields.events[0].token_ids as number[])];
/** Blocks stored and removed by the seven batches, each applied exactly once. */
const STORED = 11, REMOVED = 3;

/** Publishes batches 0-2 to nobody, registers the worker, then publishes 3-6 live. */
async function dropFirstThree(engine: FakeEngine, register: () => void): Promise<void> {
  for (let i = 0; i < 3; i++) await engine.publish(lines[i].seq, payload(i));
  register();
  await engine.waitForSubscribers();
  for (let i = 3; i < 7; i++) await engine.publish(lines[i].seq, payload(i));
}

for (const shape of [3, 4] as ReplayShape[]) {
  test(`a gap is filled from the replay ROUTER (${shape}-frame replies); nothing is applied twice`, async (t) => {
    const engine = await FakeEngine.start(shape);
    const service = await kvService();
    t.after(async () => { await service.shutdown(); engine.close(); });
    await dropFirstThree(engine, () => service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint, replay_endpoint: engine.replayEndpoint })));
    await until(service, 1, (c) => c.batchesApplied === 7, 'all seven batches');
    const c = counters(service, 1);
    assert.equal(engine.replayRequests, 1);
    assert.deepEqual([c.gaps, c.replays, c.replayFailures, c.batchesLost], [1, 1, 0, 0]);
    assert.ok(c.batchesReplayed >= 4, 'seq 0-3 came through replay');
    // live batches the replay already delivered arrive afterwards and are dropped as stale
    await until(service, 1, (x) => x.staleBatches === x.batchesReplayed - 4, 'late live duplicates dropped');
    assert.deepEqual([c.blocksStored, c.blocksRemoved, c.unknownRemoved, c.clears], [STORED, REMOVED, 0, 1]);
    assert.equal(service.ingressStats(1n)?.ranks[0].watermark, 6n);
    assert.deepEqual(await selectOverlap(service, A), { gpu: 1, cpu: 1 });
  });
}

test('without a replay endpoint the gap is counted and the stream goes on', async (t) => {
  const engine = await FakeEngine.start();
  const service = await kvService();
  t.after(async () => { await service.shutdown(); engine.close(); });
  await dropFirstThree(engine, () => service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint })));
  await until(service, 1, (c) => c.batchesApplied === 4, 'the four live batches');
  const c = counters(service, 1);
  assert.deepEqual([c.gaps, c.batchesLost, c.replays], [1, 3, 0]);
  // batch 3 continues A from a parent this listener never saw: the index refuses it
  assert.equal(c.parentNotFound, 1);
  assert.deepEqual(await selectOverlap(service, A), { gpu: 1, cpu: 1 });
});

test('a replay endpoint that never answers is abandoned after the idle timeout; live batches go on', async (t) => {
  const engine = await FakeEngine.start();
  const ingress = new ZmqKvIngress({ replayIdleTimeoutMs: 200 });
  const service = await new SelectionServiceBuilder(parseRouterConfig({})).feed(ingress).build();
  ingress.setIndexerReady();
  t.after(async () => { await service.shutdown(); await ingress.close(); engine.close(); });
  const silent = await silentTcpEndpoint(t); // accepts the request's connection, answers nothing
  await dropFirstThree(engine, () => service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint, replay_endpoint: silent })));
  await until(ingress, 1, (c) => c.batchesApplied === 4, 'live batches after the failed replay');
  const c = counters(ingress, 1);
  assert.deepEqual([c.gaps, c.replays, c.replayFailures, c.batchesLost], [1, 1, 1, 3]);
});

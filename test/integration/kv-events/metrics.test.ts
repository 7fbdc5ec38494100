/**
 * KV-event metrics over real sockets: per-rank series labelled with the exact u64 worker id,
 * blocks and batches as the ingress counted them, index blocks per tier, and every series of a
 * worker gone once it is deleted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine } from '../../support/fake-engine.js';
import { batch, removedEvent, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { kvService, workerBody } from '../../support/kv-service.js';
import { eventually } from '../../support/ports.js';
import { samples, value } from '../../support/prom-text.js';
import type { SelectionService } from '../../../src/service/service.js';

const BIG = 18446744073709551615n; // u64 max: a label that a double would round
const scrape = async (s: SelectionService): Promise<string> => (await s.metrics()).text;

test('per-rank KV-event series carry the exact worker id and vanish with the worker', async (t) => {
  const engine = await FakeEngine.start();
  const service = await kvService();
  t.after(async () => { await service.shutdown(); engine.close(); });
  service.upsertWorker(workerBody(0, { worker_id: BIG, kv_events_endpoint: engine.endpoint }));
  await engine.waitForSubscribers();
  const P = tokenRange(1000, 48);
  await engine.publish(0, batch([storedEvent([1n, 2n, 3n], null, P)]));
  await engine.publish(1, batch([removedEvent([3n])]));
  await engine.publish(3, batch([storedEvent([4n], null, tokenRange(5000, 16), { medium: 'CPU' })])); // seq 2 missing: a gap
  await eventually(() => service.ingressStats(BIG)?.counters.batchesApplied === 3, 10_000, 'three batches');

  const text = await scrape(service);
  const rank = { model_name: 'm', routing_group: 'default', worker_id: '18446744073709551615', dp_rank: '0' };
  assert.equal(value(text, 'select_service_kv_blocks_total', { ...rank, op: 'stored' }), 4);
  assert.equal(value(text, 'select_service_kv_blocks_total', { ...rank, op: 'removed' }), 1);
  assert.equal(value(text, 'select_service_kv_event_batches_total', { ...rank, outcome: 'applied' }), 3);
  assert.equal(value(text, 'select_service_kv_event_batches_total', { ...rank, outcome: 'dropped' }), 0);
  assert.equal(value(text, 'select_service_kv_gaps_total', rank), 1);
  assert.ok((value(text, 'select_service_kv_feed_last_event_age_seconds', rank) ?? Infinity) < 60);
  const part = { model_name: 'm', routing_group: 'default' };
  assert.equal(value(text, 'select_service_index_blocks', { ...part, tier: 'device' }), 2);
  assert.equal(value(text, 'select_service_index_blocks', { ...part, tier: 'host' }), 1);

  service.deleteWorker(BIG);
  const after = await scrape(service);
  assert.deepEqual(samples(after).filter((s) => s.labels.worker_id !== undefined), [], 'no series of the deleted worker');
  assert.equal(value(after, 'select_service_index_blocks', { ...part, tier: 'device' }), undefined, 'its partition went with it');
});

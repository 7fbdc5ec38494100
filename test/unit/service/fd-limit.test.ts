/**
 * The open-file limit bounds the KV-event ranks one process follows (one connection each): it is
 * read from /proc/self/limits, and a registration beyond the cap leaves the worker `incomplete`
 * with a reason that names the limit (not "Too many open file descriptors" from deep inside).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FD_RESERVE, openFileLimit, rankCapacity } from '../../../src/service/fd-limit.js';
import { SelectionServiceBuilder } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';

const LIMITS_TEXT = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                40000                files
Max locked memory         8388608              8388608              bytes
`;

test('the open-file limit is read from /proc/self/limits; unlimited means no rank cap', () => {
  assert.deepEqual(openFileLimit(LIMITS_TEXT), { soft: 20000, hard: 40000 });
  assert.deepEqual(openFileLimit(LIMITS_TEXT.replace('20000                40000', 'unlimited            unlimited')), { soft: Infinity, hard: Infinity });
  assert.equal(openFileLimit('nothing here'), null);
  assert.equal(rankCapacity({ soft: 20000 }), 20000 - FD_RESERVE);
  assert.equal(rankCapacity({ soft: Infinity }), null);
  assert.equal(rankCapacity(null), null);
  const own = openFileLimit();
  if (process.platform === 'linux') assert.ok(own && own.soft > 0, 'this process has a readable limit');
});

test('ranks beyond the cap leave the worker incomplete with a reason naming the limit; freed ranks make room', async (t) => {
  const service = await new SelectionServiceBuilder(parseRouterConfig({})).kvEvents({ maxRanks: 3 }).build();
  t.after(() => service.shutdown());
  const worker = (id: number, ranks: number) => ({
    worker_id: id, model_name: 'm', endpoint: `http://w${id}`, block_size: 16, data_parallel_size: ranks,
    kv_events_endpoints: Object.fromEntries(Array.from({ length: ranks }, (_, r) => [r, `tcp://127.0.0.1:${40000 + id * 10 + r}`])),
  });
  assert.equal(service.upsertWorker(worker(1, 2)).lifecycle, 'schedulable');
  const over = service.upsertWorker(worker(2, 2));
  assert.equal(over.lifecycle, 'incomplete');
  assert.match(over.not_schedulable_reasons?.join() ?? '', /KV-event rank limit reached: this process follows at most 3 ranks.*ulimit -n/);
  assert.equal(service.upsertWorker(worker(3, 1)).lifecycle, 'schedulable', 'one more rank fits');
  // re-posting an unchanged worker opens nothing new: never refused
  assert.equal(service.upsertWorker(worker(1, 2)).lifecycle, 'schedulable');
  service.deleteWorker(1n);
  assert.equal(service.upsertWorker(worker(2, 2)).lifecycle, 'schedulable', 'the freed ranks are reused');
});

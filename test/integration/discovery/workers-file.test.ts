/**
 * `--workers-file` discovery against a real service and a real file: the catalog follows each
 * valid snapshot (upserts, deletes of the file's own workers only), a bad snapshot changes
 * nothing and is retried after the (injected) delay, and a newer snapshot wins over a pending
 * retry.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionError } from '../../../src/core/errors.js';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { WorkersFileDiscovery, parseWorkersFile, type CatalogTarget } from '../../../src/service/discovery.js';
import { eventually } from '../../support/ports.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} };
const rec = (id: number | string, extra = '') =>
  `{"worker_id":${id},"model_name":"model","endpoint":"http://worker-${id}:8000","block_size":4${extra}}`;

async function setup(t: TestContext, retryMs: number, target?: (s: SelectionService) => CatalogTarget) {
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  const path = join(await mkdtemp(join(tmpdir(), 'workers-file-')), 'workers.json');
  const write = (text: string) => writeFile(path, text);
  const d = new WorkersFileDiscovery({ path, target: target ? target(service) : service, logger: silent, retryMs, pollMs: 20 });
  t.after(async () => { d.close(); await service.shutdown(); });
  const ids = () => service.listWorkers().map((w) => String(w.worker_id)).join(',');
  return { service, path, write, d, ids };
}

test('write, change, break, fix: the catalog follows every valid snapshot; HTTP workers are left alone', async (t) => {
  const { service, write, d, ids, path } = await setup(t, 60_000);
  await write(`[${rec(1)}, ${rec(2)}]`);
  await d.start();
  assert.equal(ids(), '1,2', 'the first snapshot is applied by start()');
  service.upsertWorker({ worker_id: 9, model_name: 'model', endpoint: 'http://worker-9:8000', block_size: 4 }); // over HTTP

  // change: 1 removed, 2 updated, 3 added (written by rename, as editors and config maps do)
  await writeFile(`${path}.tmp`, `[${rec(2, ',"total_kv_blocks":77')}, ${rec(3)}]`);
  await rename(`${path}.tmp`, path);
  await eventually(() => ids() === '2,3,9', 5000, 'the second snapshot');
  assert.equal(service.listWorkers().find((w) => w.worker_id === 2n)?.total_kv_blocks, 77);

  // break it: invalid JSON, then a record the schema rejects; nothing changes
  // (a poll may also catch a truncated file mid-write: that is one more failed snapshot, no more)
  await write(`[${rec(2)}, {"worker_id": `);
  await eventually(() => /not valid JSON/.test(d.stats.lastError ?? ''), 5000, 'the broken snapshot to fail');
  await write(`[${rec(4)}, {"worker_id": -5}]`);
  await eventually(() => /record 1: .*worker_id/.test(d.stats.lastError ?? ''), 5000, 'the rejected snapshot to fail');
  assert.equal(ids(), '2,3,9', 'a bad snapshot changes nothing');
  assert.equal(d.stats.applied, 2);

  // fix it: a newer valid snapshot applies at once (the 60 s retry is not waited for)
  await write(`[${rec('18446744073709551615')}, ${rec(3)}]`);
  await eventually(() => d.stats.applied === 3, 5000, 'the fixed snapshot');
  assert.equal(ids(), '3,9,18446744073709551615');
  assert.equal(d.stats.retries, 0, 'the newer snapshot superseded the retry');

  // an empty array removes every worker the file brought in, and only those
  await write('[]');
  await eventually(() => ids() === '9', 5000, 'the empty snapshot');
});

test('a snapshot whose apply fails is retried after the delay, without a new write', async (t) => {
  let failures = 1;
  const { write, d, ids } = await setup(t, 150, (s) => ({
    // a transient failure of the service (e.g. mid-restart) on the first upsert only
    upsertWorker: (r: unknown) => {
      if (failures > 0) { failures--; throw new SelectionError('SEL_SHUTTING_DOWN', 'selection service is shutting down'); }
      return s.upsertWorker(r);
    },
    deleteWorker: (id: bigint) => s.deleteWorker(id),
  }));
  await write(`[${rec(1)}, ${rec(2)}]`);
  await d.start();
  assert.equal(d.stats.failed, 1);
  assert.equal(ids(), '');
  await eventually(() => ids() === '1,2', 5000, 'the retry');
  assert.equal(d.stats.retries, 1);
  assert.equal(d.stats.applied, 1);
});

test('a missing file or a file that is not an array of records is reported and retried', async (t) => {
  const { write, d, ids } = await setup(t, 50);
  await d.start(); // nothing written yet
  assert.match(d.stats.lastError ?? '', /cannot read/);
  await eventually(() => d.stats.retries >= 2, 5000, 'retries of the missing file');
  await write(`{"workers": [${rec(1)}]}`);
  await eventually(() => /expected a JSON array/.test(d.stats.lastError ?? ''), 5000, 'the object snapshot');
  await write(`[${rec(1)}, ${rec(1)}]`);
  await eventually(() => /duplicate worker_id 1/.test(d.stats.lastError ?? ''), 5000, 'the duplicate snapshot');
  await write(`[${rec(1)}]`);
  await eventually(() => ids() === '1', 5000, 'the valid snapshot');
});

test('parseWorkersFile lists every problem of a snapshot', () => {
  assert.throws(() => parseWorkersFile('[{"worker_id": 1.5}, {"model_name": "m"}]'), /record 0: .*worker_id.*; record 1: .*worker_id/);
  const s = parseWorkersFile(`[${rec('9007199254740993')}]`);
  assert.deepEqual([...s.ids], [9007199254740993n], 'ids keep every digit');
});

test('a snapshot with a record outside --allowed-endpoints changes nothing (checked before any upsert)', async (t) => {
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }))
    .allowedEndpoints(['10.0.0.0/8']).build();
  const path = join(await mkdtemp(join(tmpdir(), 'workers-file-')), 'workers.json');
  const d = new WorkersFileDiscovery({ path, target: service, logger: silent, retryMs: 60_000, pollMs: 20 });
  t.after(async () => { d.close(); await service.shutdown(); });
  await writeFile(path, `[${rec(1, ',"kv_events_endpoint":"tcp://10.0.0.1:1"')}, ${rec(2, ',"kv_events_endpoint":"tcp://8.8.8.8:53"')}]`);
  await d.start();
  assert.deepEqual(service.listWorkers(), [], 'record 0 was not applied either');
  assert.match(d.stats.lastError ?? '', /record 1: .*endpoint "tcp:\/\/8.8.8.8:53" is not in --allowed-endpoints/);
});

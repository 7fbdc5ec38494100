/**
 * A worker record that is accepted but cannot be scheduled (201, `lifecycle: "incomplete"`, as
 * Dynamo answers) names what is missing in its reasons, and every upsert that leaves a worker
 * incomplete — POST, PATCH, a workers file — logs one warning naming the worker and the reasons.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from './server.js';
import { captureLog } from '../../support/log-capture.js';
import { WorkersFileDiscovery } from '../../../src/service/discovery.js';
import { eventually } from '../../support/ports.js';

test('block_size: absent is "block_size is required", 0 is "block_size must be greater than 0"', async (t) => {
  const s = await startServer(t);
  const absent = await s.call('POST', '/workers', { worker_id: 1, model_name: 'm', endpoint: 'http://w-1:8000' });
  assert.deepEqual([absent.status, absent.body.lifecycle, absent.body.not_schedulable_reasons], [201, 'incomplete', ['block_size is required']]);
  const zero = await s.call('POST', '/workers', { worker_id: 2, model_name: 'm', endpoint: 'http://w-2:8000', block_size: 0 });
  assert.deepEqual([zero.status, zero.body.not_schedulable_reasons], [201, ['block_size must be greater than 0']]);
  const nul = await s.call('POST', '/workers', { worker_id: 3, model_name: 'm', endpoint: 'http://w-3:8000', block_size: null });
  assert.deepEqual(nul.body.not_schedulable_reasons, ['block_size is required'], 'null is absent');
});

test('every upsert that leaves a worker incomplete logs one warning naming it and why (POST, PATCH, workers file)', async (t) => {
  const log = captureLog();
  const s = await startServer(t, {}, (b) => b.logger(log));
  const incomplete = /is incomplete/;
  await s.call('POST', '/workers', { worker_id: 1, model_name: 'm', endpoint: 'http://w-1:8000' });
  assert.deepEqual(log.warnings(incomplete),
    ['worker 1 of partition "m/default" is incomplete (not schedulable): block_size is required']);
  const line = log.lines.find((l) => incomplete.test(l.msg))!;
  assert.deepEqual(line.obj, { worker_id: '1', model_name: 'm', routing_group: 'default', reasons: ['block_size is required'] });

  // a PATCH that leaves it incomplete warns again; one that completes it does not
  await s.call('PATCH', '/workers/1', { taints: ['a'] });
  assert.equal(log.warnings(incomplete).length, 2);
  const done = await s.call('PATCH', '/workers/1', { block_size: 4 });
  assert.equal(done.body.lifecycle, 'schedulable');
  await s.worker(2);
  assert.equal(log.warnings(incomplete).length, 2, 'complete records are not warned about');

  // the workers file goes through the same upsert
  const dir = await mkdtemp(join(tmpdir(), 'select-incomplete-'));
  const file = join(dir, 'workers.json');
  await writeFile(file, JSON.stringify([{ worker_id: 5, model_name: 'f', block_size: 4, routing_group: 'g' }]));
  const discovery = new WorkersFileDiscovery({ path: file, target: s.service, logger: log, pollMs: 50 });
  t.after(() => discovery.close());
  await discovery.start();
  await eventually(() => log.warnings(incomplete).length === 3, 10_000, 'the workers-file warning');
  assert.equal(log.warnings(incomplete)[2], 'worker 5 of partition "f/g" is incomplete (not schedulable): endpoint is required');
});

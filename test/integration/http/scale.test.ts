/**
 * Fleet scale (issue 15): 10,000 workers registered (through the service, as a catalog sync would),
 * then selections, bookings and the inspection routes answered over real HTTP. Correctness only;
 * the latency at this size is measured by `npm run bench -- scale` (bench/RESULTS.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks } from './server.js';

const WORKERS = 10_000;

test(`scale: ${WORKERS.toLocaleString()} workers registered, then selections and bookings answered`, async (t) => {
  const s = await startServer(t);
  for (let w = 1; w <= WORKERS; w++) {
    const rec = s.service.upsertWorker({ worker_id: w, model_name: 'model', endpoint: `http://worker-${w}:8000`, block_size: 16,
      taints: w % 2 === 0 ? ['even'] : [] });
    assert.equal(rec.lifecycle, 'schedulable');
  }
  const ready = await s.call('GET', '/ready');
  assert.equal(ready.status, 200);
  assert.equal(ready.body.schedulable_workers, WORKERS);
  const picked = new Set<number>();
  for (let i = 0; i < 50; i++) {
    const r = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: `r${i}`, token_ids: toks(256, i * 1000) });
    assert.equal(r.status, 200, r.text);
    picked.add(r.body.worker_id);
  }
  assert.equal(picked.size, 50, 'each booking lands on an idle worker');
  const even = await s.call('POST', '/select', { model_name: 'model', token_ids: toks(64), routing_constraints: { required_taints: ['even'] } });
  assert.equal(even.body.worker_id % 2, 0);
  const pinned = await s.call('POST', '/select', { model_name: 'model', token_ids: toks(64), allowed_worker_ids: [WORKERS] });
  assert.equal(pinned.body.worker_id, WORKERS);
  const loads = await s.call('GET', '/loads');
  assert.equal(loads.body[0].loads.length, WORKERS);
  assert.equal(loads.body[0].loads.reduce((n: number, l: { active_requests: number }) => n + l.active_requests, 0), 50);
  assert.equal((await s.call('POST', '/overlap_scores', { model_name: 'model', token_ids: toks(64) })).body.workers.length, WORKERS);
  assert.equal((await s.call('GET', '/workers')).body.length, WORKERS);
  for (let i = 0; i < 50; i++) assert.equal((await s.call('DELETE', `/reservations/r${i}`)).status, 200);
});

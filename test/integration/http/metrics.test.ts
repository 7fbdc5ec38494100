/**
 * `GET /metrics` over HTTP: the text exposition with prom-client's content type, every required
 * family, histogram counts equal to the selections made, one registry per service, and the route
 * in `/openapi.json`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks } from './server.js';
import { samples, series, value } from '../../support/prom-text.js';

const REQUIRED: [name: string, type: string][] = [
  ['select_service_kv_feed_up', 'gauge'], ['select_service_kv_feed_last_event_age_seconds', 'gauge'],
  ['select_service_kv_event_batches_total', 'counter'], ['select_service_kv_blocks_total', 'counter'],
  ['select_service_kv_gaps_total', 'counter'], ['select_service_index_blocks', 'gauge'],
  ['select_service_index_memory_bytes', 'gauge'], ['select_service_selections_total', 'counter'],
  ['select_service_selection_duration_seconds', 'histogram'], ['select_service_selection_overlap_ratio', 'histogram'],
  ['select_service_active_reservations', 'gauge'], ['select_service_queue_depth', 'gauge'],
  ['select_service_pending_selections', 'gauge'], ['select_service_replica_messages_total', 'counter'],
  ['select_service_http_drains_cut_total', 'counter'],
];

test('GET /metrics: every required family with its type, process metrics, prom-client\'s content type', async (t) => {
  const s = await startServer(t);
  const r = await s.call('GET', '/metrics');
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  for (const [name, type] of REQUIRED) assert.ok(r.text.includes(`\n# TYPE ${name} ${type}\n`) || r.text.startsWith(`# TYPE ${name} ${type}\n`), `${name} ${type}`);
  assert.ok(series(r.text, 'process_cpu_seconds_total').length === 1, 'default process metrics');
  assert.ok((value(r.text, 'select_service_index_memory_bytes') ?? 0) > 0);
  samples(r.text); // every line parses
});

test('histogram counts equal the selections made; the overlap ratio counts bookings of the router\'s choice', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  await s.worker(2);
  const p = { model_name: 'model', token_ids: toks(16) };
  for (let i = 0; i < 5; i++) assert.equal((await s.call('POST', '/select', p)).status, 200);
  for (let i = 0; i < 3; i++) assert.equal((await s.call('POST', '/select_and_reserve', { ...p, selection_id: `r${i}` })).status, 200);
  assert.equal((await s.call('POST', '/select', { ...p, selection_id: 'c' })).status, 200);
  assert.equal((await s.call('POST', '/reservations', { model_name: 'model', selection_id: 'c' })).status, 201);
  assert.equal((await s.call('POST', '/reservations', { ...p, selection_id: 'x', worker_id: 1 })).status, 201);
  assert.equal((await s.call('POST', '/select', { model_name: 'other', token_ids: toks(4) })).status, 503);
  assert.equal((await s.call('POST', '/select_and_reserve', { ...p, selection_id: 'r0' })).status, 409);

  const text = (await s.call('GET', '/metrics')).text;
  const m = { model_name: 'model', routing_group: 'default' };
  const sel = (route: string, outcome: string, labels: Record<string, string> = m) =>
    value(text, 'select_service_selections_total', { ...labels, route, outcome });
  assert.equal(sel('select', 'ok'), 6);
  assert.equal(sel('select_and_reserve', 'ok'), 3);
  assert.equal(sel('select_and_reserve', 'error'), 1);
  assert.equal(sel('reservations', 'ok'), 2);
  assert.equal(sel('select', 'rejected', { model_name: '', routing_group: '' }), 1);
  const count = (route: string) => value(text, 'select_service_selection_duration_seconds_count', { route });
  assert.equal(count('select'), 7);
  assert.equal(count('select_and_reserve'), 4);
  assert.equal(count('reservations'), 2);
  assert.equal(value(text, 'select_service_selection_duration_seconds_bucket', { route: 'select', le: '+Inf' }), 7);
  assert.equal(value(text, 'select_service_selection_overlap_ratio_count', m), 4, '3 select_and_reserve + 1 replayed /select');
  assert.equal(value(text, 'select_service_active_reservations', m), 5);
  assert.equal(value(text, 'select_service_queue_depth', m), 0);
  assert.equal(value(text, 'select_service_pending_selections'), 0, 'the replayed entry left the cache');
  assert.equal(series(text, 'select_service_replica_messages_total').length, 0, 'replica sync is off');
});

test('two services in one process keep their own series', async (t) => {
  const a = await startServer(t);
  const b = await startServer(t);
  await a.worker(1);
  await a.call('POST', '/select', { model_name: 'model', token_ids: toks(8) });
  const ta = (await a.call('GET', '/metrics')).text, tb = (await b.call('GET', '/metrics')).text;
  assert.equal(value(ta, 'select_service_selections_total', { route: 'select', outcome: 'ok' }), 1);
  assert.deepEqual(series(tb, 'select_service_selections_total'), []);
  assert.deepEqual(series(tb, 'select_service_index_blocks'), [], 'b has no partition');
  assert.notEqual(a.service.metricsRegistry, b.service.metricsRegistry);
});

test('/metrics is in /openapi.json with a text/plain response', async (t) => {
  const s = await startServer(t);
  const doc = (await s.call('GET', '/openapi.json')).body;
  assert.deepEqual(Object.keys(doc.paths['/metrics'].get.responses['200'].content), ['text/plain']);
});

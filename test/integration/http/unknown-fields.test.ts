/**
 * Unknown body fields on a real server: still accepted (Dynamo ignores them), warned about once
 * per (route, field) a minute with the count in between and the closest known field, counted in
 * `select_service_unknown_request_fields_total{route, field}`; nested objects too; label set and
 * name length bounded whatever a client sends.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks, type Server } from './server.js';
import { captureLog, ManualClock } from '../../support/log-capture.js';
import { series, value } from '../../support/prom-text.js';
import { MAX_FIELD_LABELS } from '../../../src/service/unknown-fields.js';

const METRIC = 'select_service_unknown_request_fields_total';
const count = async (s: Server, route: string, field: string): Promise<number | undefined> =>
  value((await s.call('GET', '/metrics')).text, METRIC, { route, field });

test('misspelt fields are accepted, warned about once a minute with the closest known field, and counted', async (t) => {
  const clock = new ManualClock();
  const log = captureLog();
  const s = await startServer(t, {}, (b) => b.logger(log).clock(clock));
  await s.worker(1);
  const body = { model_name: 'model', modelName: 'model', token_id: [1], token_ids: toks(4) };
  for (let i = 0; i < 4; i++) assert.equal((await s.call('POST', '/select', body)).status, 200, 'still accepted');
  assert.deepEqual(log.warnings(/unknown field/), [
    'unknown field "modelName" in a /select body is ignored (did you mean "model_name"?)',
    'unknown field "token_id" in a /select body is ignored (did you mean "token_ids"?)',
  ]);
  assert.deepEqual(log.lines.find((l) => /"modelName"/.test(l.msg))!.obj, { route: '/select', field: 'modelName', closest: 'model_name', suppressed: 0 });
  assert.equal(await count(s, '/select', 'modelName'), 4);
  assert.equal(await count(s, '/select', 'token_id'), 4);

  // within the minute: counted, not logged; after it, one line with the occurrences in between
  clock.t = 59_999;
  await s.call('POST', '/select', body);
  assert.equal(log.warnings(/unknown field/).length, 2);
  clock.t = 60_000;
  await s.call('POST', '/select', body);
  assert.deepEqual(log.warnings(/unknown field "modelName"/).slice(1),
    ['unknown field "modelName" in a /select body is ignored (did you mean "model_name"?); 4 more since the last warning']);
  assert.equal(await count(s, '/select', 'modelName'), 6);

  // per route: the same name in another route's body is warned about there too
  await s.call('POST', '/select_and_reserve', { ...body, selection_id: 'b' });
  assert.equal(log.warnings(/"modelName" in a \/select_and_reserve body/).length, 1);
  // a body with known fields only adds nothing
  const before = log.lines.length;
  await s.call('POST', '/select', { model_name: 'model', token_ids: toks(4), session_context: { session_id: 'x' } });
  assert.equal(log.lines.length, before);
});

test('nested objects, every JSON route, and fields with no close match', async (t) => {
  const log = captureLog();
  const s = await startServer(t, {}, (b) => b.logger(log));
  const w = await s.call('POST', '/workers', { worker_id: 1, model_name: 'model', endpoint: 'http://w-1:8000', block_size: 4, blocksize: 4 });
  assert.equal(w.status, 201);
  await s.call('PATCH', '/workers/1', { model_name: 'other', taints: ['a'] });
  await s.call('POST', '/select', {
    model_name: 'model', token_ids: toks(4), session_context: { session_id: 's', sesion_final: true },
    router_config_override: { overlap_score_wieght: 1 }, pinned_worker: { worker_id: 1, dp_rank: 0, dprank: 0 },
  });
  await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'r', token_ids: toks(4) });
  await s.call('POST', '/reservations/r/output_block', { decay: 0.5 });
  assert.deepEqual(log.warnings(/unknown field/), [
    'unknown field "blocksize" in a /workers body is ignored (did you mean "block_size"?)',
    'unknown field "model_name" in a /workers/{worker_id} body is ignored',
    'unknown field "session_context.sesion_final" in a /select body is ignored (did you mean "session_context.session_final"?)',
    'unknown field "router_config_override.overlap_score_wieght" in a /select body is ignored (did you mean "router_config_override.overlap_score_weight"?)',
    'unknown field "pinned_worker.dprank" in a /select body is ignored (did you mean "pinned_worker.dp_rank"?)',
    'unknown field "decay" in a /reservations/{id}/output_block body is ignored (did you mean "decay_fraction"?)',
  ]);
  const text = (await s.call('GET', '/metrics')).text;
  assert.equal(value(text, METRIC, { route: '/workers/{worker_id}', field: 'model_name' }), 1);
  assert.equal(value(text, METRIC, { route: '/select', field: 'session_context.sesion_final' }), 1);
  assert.equal((await s.call('GET', '/workers')).body[0].model_name, 'model', 'the PATCH did not move the worker');
});

test('client-chosen names are bounded: the first 64 get a label, later ones count as "other"; long names are cut', async (t) => {
  const log = captureLog();
  const s = await startServer(t, {}, (b) => b.logger(log));
  await s.worker(1);
  const body: Record<string, unknown> = { model_name: 'model', token_ids: toks(4), [`z${'y'.repeat(5000)}`]: 1 };
  for (let i = 0; i < MAX_FIELD_LABELS + 10; i++) body[`field${i}`] = i;
  for (let round = 0; round < 2; round++) assert.equal((await s.call('POST', '/select', body)).status, 200);
  const all = series((await s.call('GET', '/metrics')).text, METRIC);
  assert.equal(all.length, MAX_FIELD_LABELS + 1, 'one series per admitted name, plus other');
  const long = all.find((x) => x.labels.field.startsWith('zy'))!;
  assert.deepEqual([long.labels.field.length, long.labels.field.endsWith('…'), long.value], [64, true, 2]);
  // 74 field<i> plus the long one: 63 field names got labels, the other 11 share one series
  assert.equal(all.find((x) => x.labels.field === 'other')!.value, 2 * 11);
  assert.equal(all.filter((x) => x.labels.field.startsWith('field')).length, 63);
  // log lines are bounded the same way: one per label a minute
  assert.equal(log.warnings(/unknown field/).length, MAX_FIELD_LABELS + 1);
  assert.ok(log.warnings(/unknown field/).every((m) => m.length < 300), 'no line carries a 5,000-character name');
});

/**
 * The 503 of a request whose partition has no schedulable worker, on a real server: it names the
 * model and routing group looked up, says when `model_name` was left out (and `"default"`
 * assumed), lists the known models, and says why the partition's own workers are not
 * schedulable; the status stays Dynamo's 503 and the body `{"error": ...}`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks, type Server } from './server.js';

/** Every route that looks a partition up, with a body for it (`extra` merged in). */
const PROMPT_ROUTES: [string, (extra: Record<string, unknown>) => Record<string, unknown>][] = [
  ['/select', (x) => ({ token_ids: toks(4), ...x })],
  ['/select_and_reserve', (x) => ({ token_ids: toks(4), ...x })],
  ['/reservations', (x) => ({ selection_id: 'explicit', worker_id: 1, token_ids: toks(4), ...x })],
  ['/potential_loads', (x) => ({ token_ids: toks(4), ...x })],
  ['/overlap_scores', (x) => ({ token_ids: toks(4), ...x })],
];

/** Asserts every prompt route answers 503 `{"error": message}` for the body with `extra`. */
async function all503(s: Server, extra: Record<string, unknown>, message: string): Promise<void> {
  for (const [path, body] of PROMPT_ROUTES) {
    const r = await s.call('POST', path, body(extra));
    assert.deepEqual([r.status, r.body], [503, { error: message }], path);
  }
}

test('without model_name: "default" was assumed, the known models are listed (a few, then a count), on every route', async (t) => {
  const s = await startServer(t);
  for (const [i, m] of ['qwen', 'llama', 'mistral', 'gemma', 'phi', 'falcon', 'olmo'].entries()) {
    await s.worker(i + 1, { model_name: m });
  }
  const known = 'known models: "falcon", "gemma", "llama", "mistral", "olmo" and 2 more';
  await all503(s, {}, 'no schedulable workers for partition "default/default": model_name was not given, so "default" was assumed; '
    + `no worker is registered for model "default"; ${known}`);
  // a client that spelt the field its own way is told the field's name
  await all503(s, { modelName: 'llama' }, 'no schedulable workers for partition "default/default": model_name was not given, '
    + `so "default" was assumed (the body has "modelName": the field is model_name); no worker is registered for model "default"; ${known}`);
  // OpenAI's name for the field
  await all503(s, { model: 'llama' }, 'no schedulable workers for partition "default/default": model_name was not given, '
    + `so "default" was assumed (the body has "model": the field is model_name); no worker is registered for model "default"; ${known}`);
  await all503(s, { model_name: 'lama' }, `no schedulable workers for partition "lama/default": no worker is registered for model "lama"; ${known}`);
  // the same request with the right name is served
  assert.equal((await s.call('POST', '/select', { model_name: 'llama', token_ids: toks(4) })).body.worker_id, 2);
});

test('a replayed /reservations whose partition lost its workers names the model too', async (t) => {
  const s = await startServer(t);
  await s.worker(1, { model_name: 'solo' });
  await s.worker(2, { model_name: 'other' });
  assert.equal((await s.call('POST', '/select', { model_name: 'solo', selection_id: 'r1', token_ids: toks(4) })).status, 200);
  assert.equal((await s.call('DELETE', '/workers/1')).status, 200);
  const r = await s.call('POST', '/reservations', { model_name: 'solo', selection_id: 'r1' });
  assert.deepEqual([r.status, r.body], [503,
    { error: 'no schedulable workers for partition "solo/default": no worker is registered for model "solo"; known models: "other"' }]);
});

test('the model is known in another routing group: the 503 says where, and that routing_group was left out', async (t) => {
  const s = await startServer(t);
  await s.worker(1, { model_name: 'm', routing_group: 'blue' });
  await s.worker(2, { model_name: 'm', routing_group: 'amber' });
  await all503(s, { model_name: 'm' }, 'no schedulable workers for partition "m/default": routing_group was not given, so "default" '
    + 'was assumed; model "m" has no worker in routing group "default", only in "amber", "blue"');
  await all503(s, { model_name: 'm', routing_group: 'green' },
    'no schedulable workers for partition "m/green": model "m" has no worker in routing group "green", only in "amber", "blue"');
});

test('the model has workers but none is schedulable: the 503 says so and why (their reasons)', async (t) => {
  const s = await startServer(t);
  const add = async (body: Record<string, unknown>): Promise<void> => {
    const r = await s.call('POST', '/workers', body);
    assert.deepEqual([r.status, r.body.lifecycle], [201, 'incomplete']);
  };
  await add({ worker_id: 1, model_name: 'inc', block_size: 4 });
  await add({ worker_id: 2, model_name: 'inc', endpoint: 'http://w-2:8000' });
  const why = 'model "inc" in routing group "default" has 2 worker(s) and none is schedulable: '
    + 'worker 1 is incomplete (endpoint is required), worker 2 is incomplete (block_size is required)';
  // nothing anywhere is schedulable: Dynamo's "are available" text, then why
  await all503(s, { model_name: 'inc' }, `no schedulable workers are available: ${why}`);
  // with a schedulable worker elsewhere, the text names the partition
  await s.worker(9, { model_name: 'ok' });
  await all503(s, { model_name: 'inc' }, `no schedulable workers for partition "inc/default": ${why}`);
  for (let id = 3; id <= 6; id++) await add({ worker_id: id, model_name: 'inc' });
  const r = await s.call('POST', '/select', { model_name: 'inc', token_ids: toks(4) });
  assert.match(r.body.error, /has 6 worker\(s\) and none is schedulable: worker 1 is incomplete \(endpoint is required\), worker 2 .*, worker 3 is incomplete \(endpoint is required; block_size is required\) and 3 more$/);
});

test('no worker registered at all: the 503 says so and how to register one', async (t) => {
  const s = await startServer(t);
  const r = await s.call('POST', '/select', { model_name: 'm', token_ids: toks(4) });
  assert.deepEqual([r.status, r.body], [503, { error: 'no schedulable workers are available: no worker is registered (POST /workers registers one)' }]);
});

/**
 * `GET /openapi.json`: an OpenAPI 3 document that lists every route of the table, documents
 * the request bodies from the zod schemas (u64 fields with their exact bounds), and describes
 * the fields the service really returns.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks } from './server.js';
import { ALL_ROUTES } from '../../../src/http/app.js';

test('the document lists every route with its method and success status', async (t) => {
  const s = await startServer(t);
  const r = await s.call('GET', '/openapi.json');
  assert.equal(r.status, 200);
  const doc = r.body;
  assert.equal(doc.openapi, '3.0.3');
  const listed = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
    .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)).sort();
  const expected = ALL_ROUTES.map((d) => `${d.method} ${d.url.replace(/:(\w+)/g, '{$1}')}`).sort();
  assert.deepEqual(listed, expected);
  for (const route of ['POST /workers', 'GET /workers', 'PATCH /workers/{worker_id}', 'DELETE /workers/{worker_id}', 'GET /health', 'GET /ready',
    'POST /select', 'POST /select_and_reserve', 'POST /reservations', 'POST /reservations/{id}/prefill_complete',
    'POST /reservations/{id}/output_block', 'DELETE /reservations/{id}', 'GET /loads', 'POST /potential_loads', 'POST /overlap_scores',
    'GET /dump', 'POST /replica_sync/register_peer', 'POST /replica_sync/deregister_peer', 'GET /replica_sync/peers', 'GET /openapi.json']) {
    assert.ok(listed.includes(route), route);
  }
  assert.ok(doc.paths['/workers'].post.responses['201']);
  assert.ok(doc.paths['/reservations'].post.responses['201']);
  assert.ok(doc.paths['/ready'].get.responses['503']);
  assert.ok(doc.paths['/select'].post.responses['415']);
  assert.deepEqual(doc.paths['/select'].post.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`),
    ['header:x-dynamo-meta-policy-class']);
});

test('request schemas come from the zod schemas: required fields, u64 and i64 integers with exact bounds', async (t) => {
  const s = await startServer(t);
  const r = await s.call('GET', '/openapi.json');
  const schemaOf = (path: string, method: string) => r.body.paths[path][method].requestBody.content['application/json'].schema;
  const reservation = schemaOf('/reservations', 'post');
  assert.deepEqual(reservation.required, ['selection_id']);
  assert.equal(reservation.properties.worker_id.format, 'uint64');
  assert.equal(reservation.properties.sequence_hashes.items.format, 'int64');
  assert.equal(reservation.properties.token_ids.items.maximum, 4294967295);
  assert.equal(schemaOf('/workers', 'post').required.includes('worker_id'), true);
  assert.equal(schemaOf('/workers/{worker_id}', 'patch').properties.worker_id, undefined, 'worker_id is not patchable');
  assert.equal(schemaOf('/select', 'post').properties.allowed_worker_ids.items.format, 'uint64');
  assert.match(r.text, /"format":"uint64","minimum":0,"maximum":18446744073709551615,/, 'the bound keeps every digit');
  assert.match(r.text, /"minimum":-9223372036854775808,"maximum":18446744073709551615/);
  assert.equal(r.body.paths['/workers/{worker_id}'].patch.parameters[0].schema.format, 'uint64');
});

test('a real select_and_reserve response uses only documented fields, with every required one', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  const doc = (await s.call('GET', '/openapi.json')).body;
  const res = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'doc', token_ids: toks(8) });
  const schema = doc.paths['/select_and_reserve'].post.responses['200'].content['application/json'].schema;
  for (const k of Object.keys(res.body)) assert.ok(k in schema.properties, `${k} is documented`);
  for (const k of schema.required) assert.ok(k in res.body, `${k} is present`);
  assert.equal(schema.properties.sequence_hashes.items.format, 'int64');
  const worker = (await s.call('GET', '/workers')).body[0];
  const wschema = doc.paths['/workers'].get.responses['200'].content['application/json'].schema.items;
  for (const k of Object.keys(worker)) assert.ok(k in wschema.properties, `${k} is documented`);
});

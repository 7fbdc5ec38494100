/**
 * Transport rules of Dynamo `lib/kv-router/src/services/selection/server.rs` over a real server: 404/405, 415, 400, 413, 422 for non-object
 * bodies, accepted JSON media types, and that a rejected request changes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rawRequest, startServer } from './server.js';

test('an unknown route is 404 "route not found"; a known path with another method is 405 with Allow', async (t) => {
  const s = await startServer(t);
  for (const [method, path] of [['GET', '/nope'], ['POST', '/workers/1/extra'], ['DELETE', '/select/x'], ['GET', '/workers/']]) {
    assert.equal((await s.call(method, path)).status, 404, `${method} ${path}`);
  }
  const nf = await s.call('GET', '/nope?x=1');
  assert.deepEqual([nf.status, nf.text], [404, '{"error":"route not found"}']);
  for (const [method, path, allow] of [
    ['PUT', '/workers', 'GET,HEAD,POST'], ['GET', '/select', 'POST'], ['GET', '/reservations', 'POST'], ['POST', '/health', 'GET,HEAD'],
    ['GET', '/workers/7', 'DELETE,PATCH'], ['GET', '/reservations/r1/output_block', 'POST'], ['PATCH', '/reservations/r1', 'DELETE'],
  ]) {
    const r = await s.call(method, path);
    assert.deepEqual([r.status, r.text], [405, '{"error":"method not allowed"}'], `${method} ${path}`);
    assert.equal(r.headers.get('allow'), allow, `${method} ${path}`);
  }
});

test('a JSON route needs application/json: none or another type is 415; +json and parameters are accepted', async (t) => {
  const s = await startServer(t);
  const body = '{"worker_id":1,"model_name":"model","endpoint":"http://w","block_size":4}';
  const noType = await rawRequest(s.base, 'POST', '/workers', body);
  assert.deepEqual([noType.status, JSON.parse(noType.text)], [415, { error: 'Expected request with `Content-Type: application/json`' }]);
  assert.equal((await rawRequest(s.base, 'POST', '/workers', body, { 'content-type': 'text/plain' })).status, 415);
  assert.equal((await rawRequest(s.base, 'POST', '/select')).status, 415, 'no body at all');
  assert.equal((await rawRequest(s.base, 'PATCH', '/workers/1', '', {})).status, 415);
  assert.deepEqual((await s.call('GET', '/workers')).body, [], 'nothing was registered');
  assert.equal((await rawRequest(s.base, 'POST', '/workers', body, { 'content-type': 'application/json; charset=utf-8' })).status, 201);
  assert.equal((await rawRequest(s.base, 'POST', '/workers', body, { 'content-type': 'Application/JSON' })).status, 201);
  assert.equal((await rawRequest(s.base, 'POST', '/workers', body, { 'content-type': 'application/vnd.dynamo+json' })).status, 201);
});

test('invalid JSON is 400 with the position; an empty JSON body is 400; a non-object body is 422', async (t) => {
  const s = await startServer(t);
  const bad = await s.call('POST', '/select', '{"model_name": "m",}');
  assert.equal(bad.status, 400);
  assert.match(bad.body.error, /^Failed to parse the request body as JSON: .*position \d+/);
  assert.equal((await s.call('POST', '/workers', '')).status, 400);
  assert.equal((await rawRequest(s.base, 'POST', '/workers', '', { 'content-type': 'application/json' })).status, 400);
  for (const body of ['[]', 'null', '42', '"x"', '18446744073709551615']) {
    const r = await s.call('POST', '/workers', body);
    assert.equal(r.status, 422, body);
    assert.match(r.body.error, /expected an object/);
  }
});

test('bodies over 8 MiB are 413; a body just under the limit is parsed', async (t) => {
  const s = await startServer(t);
  const big = `{"worker_id":1,"pad":"${'x'.repeat(8 * 1024 * 1024)}"}`;
  const r = await s.call('POST', '/workers', big);
  assert.equal(r.status, 413);
  assert.match(r.body.error, /length limit exceeded/);
  const fits = `{"worker_id":1,"model_name":"model","endpoint":"http://w","block_size":4,"pad":"${'x'.repeat(8 * 1024 * 1024 - 200)}"}`;
  assert.equal((await s.call('POST', '/workers', fits)).status, 201, 'unknown fields are ignored, even large ones');
  assert.equal('pad' in (await s.call('GET', '/workers')).body[0], false);
});

test('every error body is {"error": ...} only, with application/json', async (t) => {
  const s = await startServer(t);
  const badUrl = await rawRequest(s.base, 'POST', '/reservations/%E0%A4%A/prefill_complete');
  assert.equal(badUrl.status, 400);
  assert.deepEqual(Object.keys(JSON.parse(badUrl.text)), ['error'], 'a malformed %-escape');
  for (const r of [await s.call('GET', '/nope'), await s.call('PUT', '/workers'), await s.call('POST', '/select', '{'),
    await s.call('POST', '/reservations', {}), await s.call('DELETE', '/workers/x'), await s.call('POST', '/select', { token_ids: [1] })]) {
    assert.deepEqual(Object.keys(r.body), ['error'], r.text);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  }
});

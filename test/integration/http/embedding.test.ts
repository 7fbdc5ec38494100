/**
 * The `selectionApi` plugin inside a host application that has its own JSON routes, its own
 * error handler and its own 404: registered with a prefix, every route of the API (health,
 * readiness and the document too) is under it and unknown paths under it answer our 404;
 * registered without one, the API owns only the paths of its routes. Either way the host's
 * routes keep Fastify's JSON parser and serializer, its errors keep its error handler, and its
 * 404 answers every other path.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { selectionApi } from '../../../src/http/app.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionServiceBuilder } from '../../../src/service/service.js';
import { checkResponse } from '../../support/openapi-check.js';

interface Got { status: number; text: string; type: string | null; allow: string | null }

async function hostWithApi(t: TestContext, prefix?: string): Promise<{ app: FastifyInstance; get: (m: string, p: string, body?: string, type?: string) => Promise<Got> }> {
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  const app = Fastify();
  // the host's own JSON route, error handler and 404
  app.post('/echo', async (req) => ({ got: req.body }));
  app.get('/boom', async () => { throw Object.assign(new Error('host failure'), { statusCode: 418 }); });
  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => { void reply.code(err.statusCode ?? 500).send({ host_error: err.message }); });
  app.setNotFoundHandler((_req, reply) => { void reply.code(404).send({ host: 'not here' }); });
  await app.register(selectionApi, prefix === undefined ? { service } : { service, prefix });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => { await app.close(); await service.shutdown(); });
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const get = async (method: string, path: string, body?: string, type = 'application/json'): Promise<Got> => {
    const res = await fetch(base + path, { method, body, headers: body === undefined ? {} : { 'content-type': type } });
    const got = { status: res.status, text: await res.text(), type: res.headers.get('content-type'), allow: res.headers.get('allow') };
    // the API's answers (under its prefix; unprefixed, what the host's routes and 404 did not answer) fit its document
    const p = prefix ?? '';
    const api = p !== '' ? path.startsWith(`${p}/`) : !['/echo', '/boom'].includes(path) && !got.text.includes('"host');
    if (api) {
      checkResponse({ method, url: path.slice(p.length), status: got.status, contentType: got.type, text: got.text, allow: got.allow });
    }
    return got;
  };
  return { app, get };
}

const worker = '{"worker_id":18446744073709551615,"model_name":"m","endpoint":"http://w:1","block_size":4}';

test('prefixed: every route under the prefix, our 404 and 405 under it, the host keeps the rest', async (t) => {
  const { get } = await hostWithApi(t, '/selector');
  for (const path of ['/selector/health', '/selector/ready', '/selector/openapi.json', '/selector/workers', '/selector/loads', '/selector/dump',
    '/selector/replica_sync/peers']) {
    assert.equal((await get('GET', path)).status, path.endsWith('/ready') ? 503 : 200, path);
  }
  for (const path of ['/health', '/ready', '/workers', '/openapi.json']) {
    assert.deepEqual(await get('GET', path).then((r) => [r.status, JSON.parse(r.text)]), [404, { host: 'not here' }], `${path} is not at the root`);
  }
  const reg = await get('POST', '/selector/workers', worker);
  assert.equal(reg.status, 201);
  assert.match(reg.text, /"worker_id":18446744073709551615,/, 'u64-exact in and out');
  assert.deepEqual(await get('GET', '/selector/nope').then((r) => [r.status, r.text]), [404, '{"error":"route not found"}']);
  const wrong = await get('PUT', '/selector/workers');
  assert.deepEqual([wrong.status, wrong.text, wrong.allow], [405, '{"error":"method not allowed"}', 'GET,HEAD,POST']);
  assert.equal((await get('POST', '/selector/select', '{"model_name":')).status, 400, 'our parser and error handler under the prefix');
  const doc = JSON.parse((await get('GET', '/selector/openapi.json')).text) as { servers: { url: string }[]; paths: Record<string, unknown> };
  assert.deepEqual(doc.servers.map((s) => s.url), ['/selector'], 'clients call the paths under the prefix');
  assert.ok('/health' in doc.paths);

  // the host's own routes: Fastify's JSON parser (numbers, not bigints), its error handler and its 404
  const echo = await get('POST', '/echo', '{"n": 18446744073709551615}');
  assert.deepEqual([echo.status, JSON.parse(echo.text)], [200, { got: { n: 18446744073709552000 } }]);
  const bad = await get('POST', '/echo', '{"n":', 'application/json');
  assert.equal(bad.status, 400);
  assert.match(bad.text, /"host_error"/, 'the host error handler, not ours');
  assert.deepEqual(await get('GET', '/boom').then((r) => [r.status, JSON.parse(r.text)]), [418, { host_error: 'host failure' }]);
  assert.equal((await get('POST', '/echo', 'plain', 'text/plain')).status, 200, 'the host still has its text parser');
});

test('unprefixed: the API owns only its paths; the host\'s 404, parser and error handler stay for everything else', async (t) => {
  const { get } = await hostWithApi(t);
  assert.deepEqual(await get('GET', '/health').then((r) => [r.status, r.text]), [200, '{"status":"ok"}']);
  assert.equal((await get('POST', '/workers', worker)).status, 201);
  assert.match((await get('GET', '/workers')).text, /18446744073709551615/);
  assert.deepEqual(await get('GET', '/nope').then((r) => [r.status, JSON.parse(r.text)]), [404, { host: 'not here' }], 'the host 404');
  assert.deepEqual(await get('GET', '/workers/').then((r) => [r.status, JSON.parse(r.text)]), [404, { host: 'not here' }], 'an empty id is not our path');
  const wrong = await get('GET', '/select');
  assert.deepEqual([wrong.status, wrong.text, wrong.allow], [405, '{"error":"method not allowed"}', 'POST'], 'a path of ours answers 405');
  assert.equal((await get('POST', '/reservations/r1/prefill_complete', 'x', 'text/plain')).status, 404, 'bodies of ignored-body routes are dropped');
  const echo = await get('POST', '/echo', '{"a": [1, 2]}');
  assert.deepEqual([echo.status, JSON.parse(echo.text)], [200, { got: { a: [1, 2] } }]);
  assert.match((await get('POST', '/echo', '{', 'application/json')).text, /host_error/);
  const doc = JSON.parse((await get('GET', '/openapi.json')).text) as { servers: { url: string }[] };
  assert.deepEqual(doc.servers.map((s) => s.url), ['/']);
});

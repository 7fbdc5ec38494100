/**
 * Request ids and request log lines: an incoming `x-request-id` is the request's id in the log
 * line and comes back in the response header; without a usable one the service makes a UUID;
 * one `request completed` line per request, at debug by default (so none at `--log-level info`),
 * at info when configured so.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp, type ServerOptions } from '../../../src/http/app.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionServiceBuilder } from '../../../src/service/service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function loggedApp(t: { after(fn: () => Promise<void>): void }, o: Omit<ServerOptions, 'logger'> = {}) {
  const lines: Record<string, any>[] = [];
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  const app = await buildApp(service, { ...o, logger: { level: 'info', stream: { write: (l) => { lines.push(JSON.parse(l)); } } } });
  t.after(async () => { await app.close(); await service.shutdown(); });
  return { app, lines, requestLines: () => lines.filter((l) => l.msg === 'request completed' || l.msg === 'request errored') };
}

test('an incoming x-request-id is echoed and names the request in its log line', async (t) => {
  const { app, requestLines } = await loggedApp(t, { requestLogLevel: 'info' });
  const res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'trace-42/abc' } });
  assert.equal(res.headers['x-request-id'], 'trace-42/abc');
  const [line] = requestLines();
  assert.equal(line.level, 30, 'info');
  assert.equal(line.reqId, 'trace-42/abc');
  assert.deepEqual([line.req.method, line.req.url, line.res.statusCode], ['GET', '/health', 200]);
  assert.equal(typeof line.responseTime, 'number');
  assert.equal(requestLines().length, 1, 'one line per request');
});

test('without a usable x-request-id the service makes a UUID (also for 404s and errors)', async (t) => {
  const { app, requestLines } = await loggedApp(t, { requestLogLevel: 'info' });
  const plain = await app.inject({ method: 'GET', url: '/health' });
  const long = await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'x'.repeat(129) } });
  const spaced = await app.inject({ method: 'POST', url: '/select', headers: { 'x-request-id': 'two words', 'content-type': 'application/json' }, payload: '{' });
  assert.equal(long.statusCode, 404);
  assert.equal(spaced.statusCode, 400);
  const ids = [plain, long, spaced].map((r) => String(r.headers['x-request-id']));
  for (const id of ids) assert.match(id, UUID);
  assert.equal(new Set(ids).size, 3);
  assert.deepEqual(requestLines().map((l) => l.reqId), ids);
});

test('by default (request lines at debug) a service logging at info writes no line per request', async (t) => {
  const { app, requestLines } = await loggedApp(t);
  const res = await app.inject({ method: 'GET', url: '/ready', headers: { 'x-request-id': 'quiet-1' } });
  assert.equal(res.statusCode, 503);
  assert.equal(res.headers['x-request-id'], 'quiet-1');
  assert.deepEqual(requestLines(), []);
});

/**
 * Issue 15 over real HTTP (Fastify on 127.0.0.1, port 0, real sockets): the wrong-typed value
 * (defect 1), slow clients (defect 6), invalid UTF-8 (defect 10), optional bearer authentication
 * and the outbound-connection allowlist, each answered `{"error": ...}`.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, selectionApi, type BearerAuth, type ServerOptions } from '../../../src/http/app.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionServiceBuilder, recoverFromPeers, type SelectionService } from '../../../src/service/service.js';
import { AuthTokens } from '../../../src/service/auth.js';
import { silentLogger } from '../../../src/service/logger.js';
import { parseJson } from '../../../src/core/wire/json.js';
import { rawRequest, startServer, toks } from './server.js';
import { eventually, reservedPort } from '../../support/ports.js';

interface Served { base: string; service: SelectionService }

/** A listening server with transport options, authentication and a configured builder. */
async function serve(t: TestContext, o: { server?: ServerOptions; auth?: BearerAuth; configure?: (b: SelectionServiceBuilder) => SelectionServiceBuilder } = {}): Promise<Served> {
  const b = new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }));
  const service = await (o.configure ? o.configure(b) : b).build();
  const app = createServer(o.server);
  await app.register(selectionApi, { service, auth: o.auth });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => { await app.close(); await service.shutdown(); });
  const addr = app.server.address();
  return { base: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, service };
}

/** Writes `head`, then the body one byte per `everyMs`, and returns what the server answered when it closed the socket. */
function trickle(base: string, head: string, body: string, everyMs: number): Promise<string> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const s = connect(Number(url.port), url.hostname);
    let out = '';
    let timer: ReturnType<typeof setInterval> | undefined;
    s.on('data', (d) => { out += d.toString(); });
    s.on('error', () => {});
    s.on('close', () => { clearInterval(timer); resolve(out); });
    s.write(head);
    let i = 0;
    timer = setInterval(() => { if (i < body.length && !s.destroyed) s.write(body[i++]); }, everyMs);
  });
}

const errorOf = (text: string): unknown => (parseJson(text) as { error?: unknown }).error;

test('defect 1: a wrong-typed value over HTTP is a 422 {"error"}, not a 500', async (t) => {
  const s = await startServer(t);
  for (const body of ['{"worker_id":[18446744073709551616]}', `{"worker_id":1,"block_size":${'['.repeat(50000)}1${']'.repeat(50000)}}`,
    `{"model_name":"m","token_ids":[1,${'['.repeat(10000)}${']'.repeat(10000)}]}`]) {
    const r = await s.call('POST', body.includes('token_ids') ? '/select' : '/workers', body);
    assert.equal(r.status, 422, r.text.slice(0, 200));
    assert.equal(typeof r.body.error, 'string');
    assert.ok(r.text.length < 500, 'a short message');
  }
});

test('defect 6: a client trickling its body is cut with a 408 {"error"}; complete requests are not', async (t) => {
  const { base } = await serve(t, { server: { requestTimeoutMs: 300 } });
  const body = '{"worker_id":1,"model_name":"m","endpoint":"http://w:1","block_size":4}';
  const answer = await trickle(base, `POST /workers HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`, body, 100);
  assert.match(answer, /^HTTP\/1.1 408 /);
  assert.equal(typeof errorOf(answer.slice(answer.indexOf('\r\n\r\n') + 4)), 'string');
  const ok = await rawRequest(base, 'POST', '/workers', body, { 'content-type': 'application/json' });
  assert.equal(ok.status, 201);
});

test('defect 6: the timeouts have defaults and flags', async () => {
  const { parseCliArgs } = await import('../../../src/cli-args.js');
  const d = parseCliArgs([]);
  assert.deepEqual([d.requestTimeoutMs, d.connectionTimeoutMs], [30000, 600000]);
  const o = parseCliArgs(['--request-timeout-ms', '5000', '--connection-timeout-ms=0']);
  assert.deepEqual([o.requestTimeoutMs, o.connectionTimeoutMs], [5000, 0]);
  assert.throws(() => parseCliArgs(['--request-timeout-ms', '-1']), /--request-timeout-ms: must be an integer between 0/);
});

test('defect 10: a JSON body that is not valid UTF-8 is a 400 {"error"}', async (t) => {
  const s = await startServer(t);
  const bad = Buffer.concat([Buffer.from('{"worker_id":1,"model_name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","endpoint":"http://w:1","block_size":4}')]);
  const r = await rawRequest(s.base, 'POST', '/workers', bad, { 'content-type': 'application/json' });
  assert.equal(r.status, 400);
  assert.match(String(errorOf(r.text)), /not valid UTF-8/);
  assert.deepEqual((await s.call('GET', '/workers')).body, [], 'nothing registered');
  const good = await s.call('POST', '/workers', '{"worker_id":1,"model_name":"é","endpoint":"http://w:1","block_size":4}');
  assert.equal(good.status, 201);
  assert.equal(good.body.model_name, 'é');
});

test('auth: every route of the API but /health and /ready needs a valid bearer token (401 {"error"} otherwise)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'auth-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tokens');
  writeFileSync(file, '# rotation: old and new\nold-token-123\n\n  new-token-456  \n');
  const auth = await AuthTokens.open(file, silentLogger, 20);
  t.after(() => auth.close());
  const { base } = await serve(t, { auth });
  const call = (method: string, path: string, authorization?: string, body?: string) => fetch(base + path, {
    method, body, headers: { ...(authorization ? { authorization } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
  });
  for (const h of [undefined, 'Bearer', 'Bearer wrong', 'Basic old-token-123', 'Bearer old-token-1234', 'Bearer old-token-123 x']) {
    for (const [m, p] of [['GET', '/workers'], ['POST', '/select'], ['GET', '/dump'], ['PUT', '/workers'], ['GET', '/openapi.json']]) {
      const r = await call(m, p, h, m === 'POST' ? '{}' : undefined);
      assert.equal(r.status, 401, `${m} ${p} with ${h}`);
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      assert.match(String(errorOf(await r.text())), /bearer token/);
    }
  }
  for (const p of ['/health', '/ready']) assert.notEqual((await call('GET', p)).status, 401, p);
  assert.equal((await call('GET', '/metrics')).status, 200, '/metrics is served without a token (scrapers carry none)');
  assert.equal((await call('GET', '/no/such/route')).status, 404, 'paths outside the API are the host\'s');
  assert.equal((await call('GET', '/workers', 'Bearer old-token-123')).status, 200);
  assert.equal((await call('GET', '/workers', 'bearer   new-token-456')).status, 200);
  // rotation: the file is read again when it changes
  writeFileSync(join(dir, 'next'), 'newest-token-789\n');
  renameSync(join(dir, 'next'), file);
  await eventually(async () => (await call('GET', '/workers', 'Bearer newest-token-789')).status === 200, 5000, 'the rotated token');
  assert.equal((await call('GET', '/workers', 'Bearer old-token-123')).status, 401, 'the removed token no longer works');
  // a bad version (no token) is refused and the current tokens stay
  writeFileSync(file, '# emptied by mistake\n');
  assert.equal(await auth.reload(), false);
  assert.equal((await call('GET', '/workers', 'Bearer newest-token-789')).status, 200);
});

test('auth: --indexer-peers recovery presents the token to a peer that authenticates', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'auth-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'tokens'), 'peer-token\n');
  const auth = await AuthTokens.open(join(dir, 'tokens'), silentLogger);
  t.after(() => auth.close());
  const peer = await serve(t, { auth });
  peer.service.upsertWorker({ worker_id: 1, model_name: 'm', endpoint: 'http://w:1', block_size: 4 });
  await peer.service.selectAndReserve({ model_name: 'm', selection_id: 'x', token_ids: toks(8) });
  const fresh = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  t.after(() => fresh.shutdown());
  assert.equal(await recoverFromPeers(fresh, [peer.base], silentLogger, 0), false, 'without the token the peer answers 401');
  assert.equal(await recoverFromPeers(fresh, [peer.base], silentLogger, 0, auth.outbound), true);
  assert.equal(Object.keys(fresh.dump()).length, 1);
});

test('auth: an unusable token file stops the start with a message naming the flag', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'auth-'));
  try {
    await assert.rejects(AuthTokens.open(join(dir, 'missing'), silentLogger), /--auth-token-file: .*missing/);
    writeFileSync(join(dir, 'empty'), '\n# nothing\n');
    await assert.rejects(AuthTokens.open(join(dir, 'empty'), silentLogger), /--auth-token-file: .*no token/);
    writeFileSync(join(dir, 'spaced'), 'two words\n');
    await assert.rejects(AuthTokens.open(join(dir, 'spaced'), silentLogger), /line 1: a token has no whitespace inside/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('allowlist: a worker or replica peer outside --allowed-endpoints is a 422 naming the endpoint', async (t) => {
  const port = await reservedPort();
  const { base, service } = await serve(t, {
    configure: (b) => b.allowedEndpoints(['127.0.0.0/8', '*.gpu.internal']).replicaSync(port, []),
  });
  const post = (path: string, body: unknown) => fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const w = { worker_id: 1, model_name: 'm', endpoint: 'http://w:1', block_size: 4 };
  let r = await post('/workers', { ...w, kv_events_endpoint: 'tcp://metadata.google.internal:80' });
  assert.equal(r.status, 422);
  assert.match(String(errorOf(await r.text())), /kv_events_endpoint: endpoint "tcp:\/\/metadata.google.internal:80" is not in --allowed-endpoints/);
  r = await post('/replica_sync/register_peer', { endpoint: 'tcp://10.9.9.9:9092' });
  assert.equal(r.status, 422);
  assert.match(String(errorOf(await r.text())), /endpoint "tcp:\/\/10.9.9.9:9092" is not in --allowed-endpoints/);
  assert.deepEqual(service.listWorkers(), []);
  assert.deepEqual(service.listReplicaPeers(), []);
  assert.equal((await post('/workers', { ...w, kv_events_endpoint: 'tcp://a.gpu.internal:5557' })).status, 201);
  assert.equal((await post('/replica_sync/register_peer', { endpoint: 'tcp://127.0.0.1:9' })).status, 201);
});

test('allowlist: a malformed list or a static replica peer outside it stops the build, naming the flag', async () => {
  const cfg = parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' });
  await assert.rejects(new SelectionServiceBuilder(cfg).allowedEndpoints(['10.0.0.0/99']).build(), /--allowed-endpoints: "10.0.0.0\/99": not a CIDR block/);
  const port = await reservedPort();
  await assert.rejects(new SelectionServiceBuilder(cfg).allowedEndpoints(['10.0.0.0/8']).replicaSync(port, ['tcp://192.168.0.1:1']).build(),
    /--replica-sync-peers: endpoint: endpoint "tcp:\/\/192.168.0.1:1" is not in --allowed-endpoints/);
});

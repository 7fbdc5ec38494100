/**
 * Issue 15 over real HTTP (Fastify on 127.0.0.1, port 0, real sockets): the wrong-typed value
 * (defect 1), slow clients (defect 6), invalid UTF-8 (defect 10) and the outbound-connection
 * allowlist, each answered `{"error": ...}`.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { createServer, selectionApi, type ServerOptions } from '../../../src/http/app.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { parseJson } from '../../../src/core/wire/json.js';
import { rawRequest, startServer } from './server.js';
import { freePort } from '../../support/ports.js';

interface Served { base: string; service: SelectionService }

/** A listening server with transport options and a configured builder. */
async function serve(t: TestContext, o: { server?: ServerOptions; configure?: (b: SelectionServiceBuilder) => SelectionServiceBuilder } = {}): Promise<Served> {
  const b = new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }));
  const service = await (o.configure ? o.configure(b) : b).build();
  const app = createServer(o.server);
  await app.register(selectionApi, { service });
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

test('allowlist: a worker or replica peer outside --allowed-endpoints is a 422 naming the endpoint', async (t) => {
  const port = await freePort();
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
  const port = await freePort();
  await assert.rejects(new SelectionServiceBuilder(cfg).allowedEndpoints(['10.0.0.0/8']).replicaSync(port, ['tcp://192.168.0.1:1']).build(),
    /--replica-sync-peers: endpoint: endpoint "tcp:\/\/192.168.0.1:1" is not in --allowed-endpoints/);
});

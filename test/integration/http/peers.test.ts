/**
 * Replica-sync peer routes over a real server (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`; Dynamo's peer sub-router tests):
 * disabled -> [] and 409; enabled -> 201 new, 200 known, 400 invalid, sorted list, 404 unknown.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './server.js';
import { reservedPort } from '../../support/ports.js';

test('without --replica-sync-port: peers is [] and register/deregister are 409 "replica sync is disabled"', async (t) => {
  const s = await startServer(t);
  const list = await s.call('GET', '/replica_sync/peers');
  assert.deepEqual([list.status, list.body], [200, []]);
  for (const route of ['register_peer', 'deregister_peer']) {
    const r = await s.call('POST', `/replica_sync/${route}`, { endpoint: 'tcp://127.0.0.1:5555' });
    assert.deepEqual([r.status, r.body], [409, { error: 'replica sync is disabled' }], route);
  }
});

test('with replica sync: register 201 then 200, invalid 400, peers sorted, deregister 200 then 404', async (t) => {
  const port = await reservedPort();
  const s = await startServer(t, {}, (b) => b.replicaSync(port, []));
  const p1 = `tcp://127.0.0.1:${await reservedPort()}`;
  const p2 = 'ipc:///tmp/select-service-peer-test';
  const first = await s.call('POST', '/replica_sync/register_peer', { endpoint: p1 });
  assert.deepEqual([first.status, first.body], [201, { status: 'ok' }]);
  const again = await s.call('POST', '/replica_sync/register_peer', { endpoint: p1, extra: true });
  assert.deepEqual([again.status, again.body], [200, { status: 'ok' }]);
  assert.equal((await s.call('POST', '/replica_sync/register_peer', { endpoint: p2 })).status, 201);
  const invalid = await s.call('POST', '/replica_sync/register_peer', { endpoint: 'invalid' });
  assert.deepEqual([invalid.status, invalid.body], [400, { error: 'invalid ZMQ endpoint `invalid`: missing scheme' }]);
  const missing = await s.call('POST', '/replica_sync/register_peer', {});
  assert.equal(missing.status, 422);
  assert.match(missing.body.error, /endpoint/);
  assert.deepEqual((await s.call('GET', '/replica_sync/peers')).body, [p2, p1].sort());
  assert.equal((await s.call('POST', '/replica_sync/deregister_peer', { endpoint: p1 })).status, 200);
  const gone = await s.call('POST', '/replica_sync/deregister_peer', { endpoint: p1 });
  assert.deepEqual([gone.status, gone.body], [404, { error: 'peer not found' }]);
  assert.deepEqual((await s.call('GET', '/replica_sync/peers')).body, [p2]);
});

/**
 * Issue 29, in one process over real ZMQ on 127.0.0.1: frees that cannot be lost (a free that
 * overtakes its booking, a DELETE of an id this replica never saw) and the anti-entropy that
 * repairs what the mesh missed while a peer was away, without new traffic.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as zmq from 'zeromq';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { LIFECYCLE_TOPIC, encodeReplicaEvent } from '../../../src/service/replica-wire.js';
import type { LifecycleEvent } from '../../../src/core/wire/events.js';
import { eventually, reservedPort } from '../../support/ports.js';

const cfg = parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' });
const W = { worker_id: 1, model_name: 'model', endpoint: 'http://worker-1:8000', block_size: 4 };
const active = (s: SelectionService): number => s.loads()[0]?.loads[0]?.active_requests ?? -1;
const status = (f: () => unknown): number => { try { f(); return 200; } catch (e) { return (e as { status: number }).status; } };

async function replica(port: number, peers: string[] = []): Promise<SelectionService> {
  const s = await new SelectionServiceBuilder(cfg).replicaSync(port, peers).build();
  s.upsertWorker(W);
  return s;
}

/** Books probes on `from` until `to` sees one (ZMQ slow joiner), then frees them. */
async function linked(from: SelectionService, to: SelectionService, tag: string): Promise<void> {
  let i = 0;
  await eventually(async () => {
    const id = `${tag}-${i++}`;
    await from.selectAndReserve({ model_name: 'model', selection_id: id, token_ids: [9, 9, 9, 9] });
    await new Promise((r) => setTimeout(r, 30));
    const seen = active(to) > 0;
    from.freeReservation(id);
    return seen;
  }, 10000, `replica link ${tag}`);
  await eventually(() => active(to) === 0 && active(from) === 0, 5000, `${tag} probes freed`);
}

const ref = { modelName: 'model', routingGroup: 'default', blockSize: 4, workerId: 1n, dpRank: 0, loraName: null };
const add = (requestId: string): LifecycleEvent => ({
  ...ref, requestId, kind: 'add', seq: new BigUint64Array([7n]), trackPrefillTokens: true, expectedOutputTokens: null, prefillTokens: 4,
});

test('a free that overtakes its booking frees it: the late admission is not applied', async (t) => {
  const pub = new zmq.Publisher({ linger: 0 });
  await pub.bind('tcp://127.0.0.1:*');
  const b = await replica(await reservedPort(), [pub.lastEndpoint!]);
  t.after(async () => { pub.close(); await b.shutdown(); });
  const routerId = 0x5eedn;
  let i = 0;
  await eventually(async () => {
    const id = `probe-${i++}`;
    await pub.send([LIFECYCLE_TOPIC, encodeReplicaEvent({ routerId, event: add(id) })]);
    await new Promise((r) => setTimeout(r, 30));
    const seen = active(b) > 0;
    await pub.send([LIFECYCLE_TOPIC, encodeReplicaEvent({ routerId, event: { ...ref, requestId: id, kind: 'free' } })]);
    return seen;
  }, 10000, 'fake peer linked');
  await eventually(() => active(b) === 0, 5000, 'probes freed');

  // the free of `late` (published by a third replica) reaches B before its admission
  await pub.send([LIFECYCLE_TOPIC, encodeReplicaEvent({ routerId: 0x7777n, event: { ...ref, requestId: 'late', kind: 'free' } })]);
  await pub.send([LIFECYCLE_TOPIC, encodeReplicaEvent({ routerId, event: add('late') })]);
  await pub.send([LIFECYCLE_TOPIC, encodeReplicaEvent({ routerId, event: add('marker') })]);
  await eventually(() => b.reservations.lookup('marker') !== undefined, 5000, 'marker applied');
  assert.equal(b.reservations.lookup('late'), undefined, 'the overtaken admission stays freed');
  assert.equal(active(b), 1);
});

test('a DELETE of an id this replica never saw answers 404 and still frees it on the peer that holds it', async (t) => {
  const pa = await reservedPort(), pb = await reservedPort();
  // A listens to B; B does not listen to A (yet): A's booking never reaches B
  const a = await replica(pa, [`tcp://127.0.0.1:${pb}`]);
  const b = await replica(pb);
  t.after(async () => { await a.shutdown(); await b.shutdown(); });
  await linked(b, a, 'ba');
  await a.selectAndReserve({ model_name: 'model', selection_id: 'only-on-a', token_ids: [1, 2, 3, 4] });
  assert.equal(active(a), 1);
  assert.equal(status(() => b.freeReservation('only-on-a')), 404);
  await eventually(() => active(a) === 0, 5000, 'the free reaches A');
});

test('anti-entropy: a booking and a free missed while a peer was away are repaired without new traffic', async (t) => {
  const pa = await reservedPort(), pb = await reservedPort();
  const a = await replica(pa, [`tcp://127.0.0.1:${pb}`]);
  const b = await replica(pb, [`tcp://127.0.0.1:${pa}`]);
  t.after(async () => { await a.shutdown(); await b.shutdown(); });
  await linked(a, b, 'ab');
  await linked(b, a, 'ba');
  await a.selectAndReserve({ model_name: 'model', selection_id: 'kept', token_ids: [1, 2, 3, 4] });
  await a.selectAndReserve({ model_name: 'model', selection_id: 'freed', token_ids: [5, 6, 7, 8] });
  await eventually(() => active(b) === 2, 5000, 'both on B');
  b.deregisterReplicaPeer(`tcp://127.0.0.1:${pa}`);
  await new Promise((r) => setTimeout(r, 300));
  a.freeReservation('freed'); // B misses the free: a phantom there
  await a.selectAndReserve({ model_name: 'model', selection_id: 'missed', token_ids: [9, 10, 11, 12] }); // and this admission
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual([active(a), active(b)], [2, 2]);
  assert.ok(b.reservations.lookup('freed'), 'B holds a phantom');
  b.registerReplicaPeer(`tcp://127.0.0.1:${pa}`);
  await eventually(() => b.reservations.lookup('freed') === undefined && b.reservations.lookup('missed') !== undefined, 15000,
    'B drops the phantom and learns the missed booking');
  assert.equal(active(b), 2);
});

test('ready means meshed: not ready while a peer is missing, ready once both ways connected and the first digests exchanged', async (t) => {
  const pa = await reservedPort(), pb = await reservedPort();
  const a = await replica(pa, [`tcp://127.0.0.1:${pb}`]);
  t.after(async () => { await a.shutdown(); await b?.shutdown(); });
  let b: SelectionService | null = null;
  const r = a.ready();
  assert.equal(r.ready, false, 'a worker is schedulable, but the peer is not there');
  assert.deepEqual(r.replica_sync, { meshed: false, waiting: [`tcp://127.0.0.1:${pb}: not connected`] });
  b = await replica(pb, [`tcp://127.0.0.1:${pa}`]);
  await eventually(() => a.ready().ready && b!.ready().ready, 15_000, 'both meshed');
  assert.deepEqual(a.ready().replica_sync, { meshed: true, waiting: [] });
  // a booking made the moment A is ready reaches B without any repair
  await a.selectAndReserve({ model_name: 'model', selection_id: 'first', token_ids: [1, 2, 3, 4] });
  await eventually(() => b!.reservations.lookup('first') !== undefined, 5000, 'first booking on B');
  assert.equal(b.replicaMetrics()!.repair.added, 0);
});

test('a replica whose worker is registered after its first digests is not ready until it holds the peers\' bookings on it', async (t) => {
  const pa = await reservedPort(), pb = await reservedPort();
  const a = await replica(pa, [`tcp://127.0.0.1:${pb}`]);
  const b = await new SelectionServiceBuilder(cfg).replicaSync(pb, [`tcp://127.0.0.1:${pa}`]).build();
  t.after(async () => { await a.shutdown(); await b.shutdown(); });
  for (const id of ['x', 'y', 'z']) await a.selectAndReserve({ model_name: 'model', selection_id: id, token_ids: [1, 2, 3, 4] });
  // B hears A's digests, which hold bookings on a worker B does not know yet
  await eventually(() => (b.replicaMetrics()!.repair.digestMatches + b.replicaMetrics()!.repair.digestMismatches) >= 2, 15_000, 'B compared two digests of A');
  assert.deepEqual(b.ready().replica_sync, { meshed: false, waiting: ['no worker registered here yet'] });
  b.upsertWorker(W);
  // from the first moment B answers ready it holds A's three bookings (same tick: no race)
  await eventually(() => b.ready().ready, 15_000, 'B ready');
  assert.equal(active(b), 3, 'ready with the peer\'s bookings on the worker registered last');
  assert.ok(b.replicaMetrics()!.repair.added >= 3, 'learnt by repair');
});

test('the ready wait is bounded: after --replica-sync-ready-timeout-secs ready anyway, flagged', async (t) => {
  const missing = `tcp://127.0.0.1:${await reservedPort()}`;
  const a = await new SelectionServiceBuilder(cfg).replicaSync(await reservedPort(), [missing], { readyTimeoutSecs: 0.5 }).build();
  t.after(() => a.shutdown());
  a.upsertWorker(W);
  await eventually(() => a.ready().ready, 5000, 'ready after the timeout');
  assert.deepEqual(a.replicaMetrics()!.mesh, { meshed: true, timedOut: true, waiting: [] });
  assert.deepEqual(a.replicaMetrics()!.peers, [{ endpoint: missing, up: false }]);
});

test('messages a peer published and this replica never received are counted as lost', async (t) => {
  const pa = await reservedPort(), pb = await reservedPort();
  const a = await replica(pa, [`tcp://127.0.0.1:${pb}`]);
  const b = await replica(pb, [`tcp://127.0.0.1:${pa}`]);
  t.after(async () => { await a.shutdown(); await b.shutdown(); });
  await eventually(() => a.ready().ready && b.ready().ready, 15_000, 'meshed');
  b.deregisterReplicaPeer(`tcp://127.0.0.1:${pa}`);
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < 5; i++) await a.selectAndReserve({ model_name: 'model', selection_id: `x${i}`, token_ids: [i, 2, 3, 4] });
  b.registerReplicaPeer(`tcp://127.0.0.1:${pa}`);
  await eventually(() => b.replicaStats()!.lost === 5, 10_000, 'five lost');
  await eventually(() => active(b) === 5, 10_000, 'and repaired');
  assert.deepEqual([...b.replicaMetrics()!.drops], [{ direction: 'received', reason: 'lost', count: 5 }]);
});

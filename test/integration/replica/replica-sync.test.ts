/**
 * Replica sync between two in-process services over real ZMQ sockets on 127.0.0.1 (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`):
 * lifecycle propagation, mirrored bookings resolvable on the peer, receive rules, peer routes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { SelectionError } from '../../../src/core/errors.js';
import { eventually, reservedPort } from '../../support/ports.js';

const cfg = parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' });
const W = { worker_id: 1, model_name: 'model', endpoint: 'http://worker-1:8000', block_size: 4 };
const load = (s: SelectionService) => {
  const l = s.loads()[0]?.loads[0];
  return l ? [l.active_requests, l.potential_decode_blocks, l.potential_prefill_tokens] : null;
};

async function pair(): Promise<{ a: SelectionService; b: SelectionService; pa: number; pb: number }> {
  const pa = await reservedPort(), pb = await reservedPort();
  const a = await new SelectionServiceBuilder(cfg).replicaSync(pa, [`tcp://127.0.0.1:${pb}`]).build();
  const b = await new SelectionServiceBuilder(cfg).replicaSync(pb, []).build();
  assert.deepEqual(b.registerReplicaPeer(`tcp://127.0.0.1:${pa}`), { created: true });
  assert.deepEqual(b.registerReplicaPeer(`tcp://127.0.0.1:${pa}`), { created: false });
  for (const s of [a, b]) s.upsertWorker(W);
  return { a, b, pa, pb };
}

/** Books probes on A until B sees one (ZMQ slow joiner), then frees them. */
async function warm(a: SelectionService, b: SelectionService): Promise<void> {
  let i = 0;
  await eventually(async () => {
    const id = `warm-${i++}`;
    await a.selectAndReserve({ model_name: 'model', selection_id: id, token_ids: [9, 9, 9, 9] });
    await new Promise((r) => setTimeout(r, 30));
    a.freeReservation(id);
    return (b.replicaStats()?.applied ?? 0) > 0;
  }, 5000, 'replica link');
  await eventually(() => load(b)?.[0] === 0, 3000, 'warm-up frees');
}

test('a booking on A shows on B; prefill_complete and DELETE propagate; B can free A\'s booking', async () => {
  const { a, b } = await pair();
  try {
    await warm(a, b);
    await a.selectAndReserve({ model_name: 'model', selection_id: 's1', token_ids: [1, 2, 3, 4] });
    await eventually(() => JSON.stringify(load(b)) === '[1,1,4]', 3000, 'admission on B');
    a.prefillComplete('s1');
    await eventually(() => JSON.stringify(load(b)) === '[1,1,0]', 3000, 'prefill on B');
    a.freeReservation('s1');
    await eventually(() => JSON.stringify(load(b)) === '[0,0,0]', 3000, 'free on B');
    // B remembers that a peer freed the mirrored booking
    assert.throws(() => b.prefillComplete('s1'), { status: 404, message: 'reservation s1 was already freed (by a replica peer)' });

    // mirrored booking indexed on B: lifecycle calls on B resolve it
    await a.selectAndReserve({ model_name: 'model', selection_id: 's2', token_ids: [5, 6, 7, 8] });
    await eventually(() => load(b)?.[0] === 1, 3000, 'second admission on B');
    b.addOutputBlock('s2', {});
    assert.equal(load(b)?.[1], 2, 'output blocks are local');
    b.freeReservation('s2');
    assert.throws(() => b.freeReservation('s2'), (e: unknown) => e instanceof SelectionError && e.status === 404
      && e.message === 'reservation s2 was already freed');
    // the mesh runs both ways: B's Free reaches A, which drops its own booking
    await eventually(() => load(a)?.[0] === 0, 3000, 'free from B applied on A');
    assert.throws(() => a.freeReservation('s2'), { status: 404, message: 'reservation s2 was already freed (by a replica peer)' });
  } finally {
    await a.shutdown();
    await b.shutdown();
  }
});

test('peer routes: invalid endpoint 400, unknown deregister 404, sorted list; disabled service 409 and []', async () => {
  const pa = await reservedPort();
  // peers that are never bound (reserved ports): nothing answers the replica's subscriber
  const [p0, p1] = [`tcp://127.0.0.1:${await reservedPort()}`, `tcp://127.0.0.1:${await reservedPort()}`];
  const a = await new SelectionServiceBuilder(cfg).replicaSync(pa, [p1]).build();
  const off = await new SelectionServiceBuilder(cfg).build();
  try {
    const status = (f: () => unknown) => { try { f(); return 0; } catch (e) { return (e as SelectionError).status; } };
    assert.equal(status(() => a.registerReplicaPeer('invalid')), 400);
    assert.match(String((() => { try { a.registerReplicaPeer('invalid'); } catch (e) { return (e as Error).message; } })()), /invalid ZMQ endpoint `invalid`/);
    a.registerReplicaPeer(p0);
    assert.deepEqual(a.listReplicaPeers(), [p0, p1].sort());
    a.deregisterReplicaPeer(p0);
    assert.equal(status(() => a.deregisterReplicaPeer(p0)), 404);
    assert.deepEqual(off.listReplicaPeers(), []);
    assert.equal(status(() => off.registerReplicaPeer('tcp://127.0.0.1:1')), 409);
  } finally {
    await a.shutdown();
    await off.shutdown();
  }
});

test('receive rules: an unknown partition, block-size mismatch or unregistered worker is dropped', async () => {
  const { a, b } = await pair();
  try {
    await warm(a, b);
    b.upsertWorker({ ...W, worker_id: 2, model_name: 'only-on-b' });
    a.upsertWorker({ ...W, worker_id: 3 });
    const before = b.replicaStats()!.rejected;
    await a.selectAndReserve({ model_name: 'model', selection_id: 'w3', token_ids: [1, 2, 3, 4], pinned_worker: { worker_id: 3, dp_rank: 0 } });
    await eventually(() => b.replicaStats()!.rejected > before, 3000, 'rejection');
    assert.equal(load(b)?.[0], 0);
  } finally {
    await a.shutdown();
    await b.shutdown();
  }
});

test('shutdown releases the replica port', async () => {
  const p = await reservedPort();
  // ZMQ closes a listener on its I/O thread after close()/unbind() return; shutdown waits for it.
  // Without that wait 3-8 rebinds in 100 failed with EADDRINUSE on a loaded machine (CI saw one).
  for (let i = 0; i < 50; i++) {
    const a = await new SelectionServiceBuilder(cfg).replicaSync(p).build();
    await a.shutdown();
  }
  const again = await new SelectionServiceBuilder(cfg).replicaSync(p).build();
  await again.shutdown();
  await assert.rejects(new SelectionServiceBuilder(cfg).replicaSync(0).build(), /replica-sync-port/);
  await assert.rejects(new SelectionServiceBuilder(cfg).replicaSync(null as unknown as number, ['tcp://127.0.0.1:1']).build(), /requires --replica-sync-port/);
});

test('an invalid static peer names --replica-sync-peers and leaves the port free', async () => {
  const p = await reservedPort();
  await assert.rejects(new SelectionServiceBuilder(cfg).replicaSync(p, ['not-an-endpoint']).build(),
    /--replica-sync-peers: invalid ZMQ endpoint `not-an-endpoint`: missing scheme/);
  const ok = await new SelectionServiceBuilder(cfg).replicaSync(p).build();
  await ok.shutdown();
});

/**
 * Session bindings over the replica mesh (Dynamo `lib/kv-router/src/services/common/replica_sync.rs` topic dynamo.session-affinity.v1): a
 * binding committed on A steers the same session on B; B's own bookings then hold it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { eventually, reservedPort } from '../../support/ports.js';

const cfg = parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' });
const worker = (id: number) => ({ worker_id: id, model_name: 'model', endpoint: `http://worker-${id}:8000`, block_size: 4 });

async function build(port: number, peer: number): Promise<SelectionService> {
  return new SelectionServiceBuilder(cfg).replicaSync(port, [`tcp://127.0.0.1:${peer}`])
    .sessionAffinity({ ttlSecs: 60, mode: 'hard' }).build();
}

test('a binding committed on A steers the session on B (replicated over ZMQ)', async () => {
  const pa = await reservedPort(), pb = await reservedPort();
  const a = await build(pa, pb);
  const b = await build(pb, pa);
  try {
    for (const s of [a, b]) { s.upsertWorker(worker(1)); s.upsertWorker(worker(2)); }
    // the mesh is up once a probe session bound on A reaches B (ZMQ slow joiner)
    let i = 0;
    await eventually(async () => {
      const id = `probe-${i++}`;
      await a.selectAndReserve({ model_name: 'model', selection_id: id, token_ids: [7, 7, 7, 7], session_id: id, allowed_worker_ids: [2] });
      a.freeReservation(id);
      await new Promise((r) => setTimeout(r, 30));
      return (await b.select({ model_name: 'model', token_ids: [1, 2, 3, 4], session_id: id })).worker_id === 2n;
    }, 8000, 'affinity link');

    await a.selectAndReserve({ model_name: 'model', selection_id: 'x', token_ids: [1, 2, 3, 4], session_id: 'chat', allowed_worker_ids: [2] });
    // once B carries A's booking on worker 2, the cost alone would pick worker 1: only the
    // replicated binding can send the session to worker 2
    const busyOn2 = () => b.loads()[0].loads.find((l) => l.worker_id === 2n)?.active_requests === 1;
    await eventually(async () => busyOn2()
      && (await b.select({ model_name: 'model', token_ids: [5, 6, 7, 8] })).worker_id === 1n
      && (await b.select({ model_name: 'model', token_ids: [5, 6, 7, 8], session_id: 'chat' })).worker_id === 2n, 3000, 'binding on B');
    const onB = await b.selectAndReserve({ model_name: 'model', selection_id: 'z', token_ids: [5, 6, 7, 8], session_id: 'chat' });
    assert.equal(onB.worker_id, 2n, 'a booking on B follows the replicated binding');
    // and B enforces it in hard mode: a booking its constraints send elsewhere is rejected
    await assert.rejects(b.selectAndReserve({ model_name: 'model', selection_id: 'y', token_ids: [5, 6, 7, 8], session_id: 'chat',
      allowed_worker_ids: [1] }), (e: unknown) => (e as { status?: number }).status === 400);
  } finally {
    await a.shutdown();
    await b.shutdown();
  }
});

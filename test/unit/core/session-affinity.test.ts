/**
 * Session affinity through the SelectionCore (Dynamo `lib/kv-router/src/services/selection/affinity.rs`, our versions of Dynamo's core tests):
 * binding on bookings, read-only steering on /select, two-phase binding, hard and soft
 * dispatch, leases and the idle TTL, failover, a full table, replicated bindings, and the
 * session fields reaching custom policies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCore, rejects, worker } from './core-helpers.js';
import type { AffinityEvent } from '../../../src/core/wire/events.js';
import type { CoreOptions } from '../../../src/core/options.js';
import { PolicyRegistry, type WorkerSelectionContext } from '../../../src/core/select/policy.js';

const T = [1, 2, 3, 4];
const T2 = [9, 10, 11, 12];

function affinityCore(mode: 'hard' | 'soft' = 'hard', o: CoreOptions = {}) {
  const events: AffinityEvent[] = [];
  const made = makeCore({}, {
    sessionAffinity: { ttlSecs: 30, mode, ...(o.sessionAffinity ?? {}) }, replicaId: 77n, affinitySequenceStart: 1n,
    hooks: { onAffinity: (e) => events.push(e) }, ...o,
  });
  made.core.upsertWorker(worker(1));
  made.core.upsertWorker(worker(2));
  return { ...made, events };
}

/** Books on worker `w` for session `s` by steering with allowed ids (a new session binds where it lands). */
async function bookOn(core: ReturnType<typeof affinityCore>['core'], id: string, s: string, w: number) {
  return core.selectAndReserve({ model_name: 'model', selection_id: id, token_ids: T, session_id: s, allowed_worker_ids: [w] });
}

test('select_and_reserve binds a new session; later bookings follow it against the cost', async () => {
  const { core, events } = affinityCore();
  assert.equal((await bookOn(core, 'a', 's', 2)).worker_id, 2n);
  assert.deepEqual(events.map((e) => [e.modelName, e.routingGroup, e.sessionId, e.workerId, e.dpRank, e.writerId]),
    [['model', 'default', 's', 2n, 0, 77n]]);
  // worker 2 now carries load: without affinity the next request would go to worker 1
  for (let i = 0; i < 3; i++) {
    const r = await core.selectAndReserve({ model_name: 'model', selection_id: `n${i}`, token_ids: T2, session_id: 's' });
    assert.equal(r.worker_id, 2n);
  }
  const unbound = await core.selectAndReserve({ model_name: 'model', selection_id: 'u', token_ids: T2 });
  assert.equal(unbound.worker_id, 1n, 'a request without a session goes by cost');
});

test('/select reads a live binding but never creates one', async () => {
  const { core } = affinityCore();
  const q = await core.select({ model_name: 'model', token_ids: T, session_id: 'fresh', allowed_worker_ids: [2] });
  assert.equal(q.worker_id, 2n);
  const next = await core.selectAndReserve({ model_name: 'model', selection_id: 'x', token_ids: T, session_id: 'fresh', allowed_worker_ids: [1] });
  assert.equal(next.worker_id, 1n, 'the query did not bind, so this booking initializes freely');
  await bookOn(core, 'b', 'steer', 2);
  core.freeReservation('b');
  for (let i = 0; i < 3; i++) assert.equal((await core.select({ model_name: 'model', token_ids: T2, session_id: 'steer' })).worker_id, 2n);
});

test('two-phase: a cached select with a session binds it when the reservation replays', async () => {
  const { core } = affinityCore();
  await core.select({ model_name: 'model', selection_id: 'p', token_ids: T, session_id: 's2', allowed_worker_ids: [2] });
  await core.createReservation({ model_name: 'model', selection_id: 'p' });
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: T2, session_id: 's2' });
  assert.equal(r.worker_id, 2n);
});

test('session_context.session_id wins over session_id; affinity_target and pinned_worker skip steering', async () => {
  const { core } = affinityCore();
  await bookOn(core, 'a', 'ctx', 2);
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: T2, session_id: 'other',
    session_context: { session_id: 'ctx' } });
  assert.equal(r.worker_id, 2n);
  const pinned = await core.selectAndReserve({ model_name: 'model', selection_id: 'c', token_ids: T2, session_id: 'ctx',
    pinned_worker: { worker_id: 1, dp_rank: 0 } });
  assert.equal(pinned.worker_id, 1n, 'hard mode does not reject an explicit pin: steering was skipped');
  const target = await core.selectAndReserve({ model_name: 'model', selection_id: 'd', token_ids: T2, session_id: 'ctx',
    affinity_target: { worker_id: 1 } });
  assert.equal(target.worker_id, 1n);
});

test('hard mode: constraints sending a booking away from a live binding are a 400; nothing booked; the binding is dropped', async () => {
  const { core } = affinityCore('hard');
  await bookOn(core, 'a', 's', 2);
  const before = JSON.stringify(core.loads(), (_k, v) => (typeof v === 'bigint' ? String(v) : v));
  await rejects(() => bookOn(core, 'b', 's', 1), 400, /session s is bound to worker 2, not 1/);
  assert.equal(JSON.stringify(core.loads(), (_k, v) => (typeof v === 'bigint' ? String(v) : v)), before, 'nothing booked');
  assert.equal(core.reservations.state('b'), undefined, 'the id is released');
  assert.equal((await bookOn(core, 'c', 's', 1)).worker_id, 1n, 'the next booking re-initializes the session');
  await rejects(() => bookOn(core, 'd', 's', 2), 400);
});

test('hard mode: a replayed selection that the binding rejects is a 400 and its cached entry is consumed', async () => {
  const { core } = affinityCore('hard');
  await core.select({ model_name: 'model', selection_id: 'p', token_ids: T, session_id: 's', allowed_worker_ids: [1] });
  await bookOn(core, 'a', 's', 2);
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'p' }), 400);
  await rejects(() => core.createReservation({ model_name: 'model', selection_id: 'p' }), 404);
});

test('soft mode follows the dispatch', async () => {
  const { core } = affinityCore('soft');
  await bookOn(core, 'a', 's', 2);
  assert.equal((await bookOn(core, 'b', 's', 1)).worker_id, 1n);
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'c', token_ids: T2, session_id: 's' });
  assert.equal(r.worker_id, 1n, 'rebound to worker 1');
});

test('leases: the binding lives while a reservation holds it; the idle TTL starts at the last free', async () => {
  const { core, clock } = affinityCore();
  await bookOn(core, 'a', 's', 2);
  clock.advanceSecs(40);
  core.maintain();
  assert.equal((await core.select({ model_name: 'model', token_ids: T2, session_id: 's' })).worker_id, 2n, 'leased: still bound');
  core.freeReservation('a');
  clock.advanceSecs(29);
  assert.equal((await core.select({ model_name: 'model', token_ids: T2, session_id: 's' })).worker_id, 2n);
  clock.advanceSecs(2);
  core.maintain();
  assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: T2, session_id: 's', allowed_worker_ids: [1] })).worker_id, 1n,
    'expired: a new booking initializes freely, even in hard mode');
});

test('failover: a deleted bound worker re-initializes the binding on the next booking, without an error', async () => {
  const { core } = affinityCore();
  await bookOn(core, 'a', 's', 2);
  core.deleteWorker(2n);
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: T2, session_id: 's' });
  assert.equal(r.worker_id, 1n);
  core.upsertWorker(worker(2));
  for (let i = 0; i < 2; i++) {
    assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: `c${i}`, token_ids: T2, session_id: 's' })).worker_id, 1n);
  }
});

test('a removed rank re-initializes a rank binding', async () => {
  const { core } = affinityCore();
  core.upsertWorker(worker(3, { data_parallel_size: 2 }));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: T, session_id: 'r', pinned_worker: undefined,
    allowed_worker_ids: [3] });
  const bound = (await core.select({ model_name: 'model', token_ids: T2, session_id: 'r' }));
  core.upsertWorker(worker(3, { data_parallel_start_rank: bound.dp_rank === 0 ? 1 : 0, data_parallel_size: 1 }));
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: T2, session_id: 'r' });
  assert.notEqual(`${r.worker_id}:${r.dp_rank}`, `3:${bound.dp_rank}`);
});

test('a full table routes new sessions unpinned, without an error', async () => {
  const { core } = affinityCore('hard', { sessionAffinity: { ttlSecs: 30, mode: 'hard', maxEntries: 1 } });
  await bookOn(core, 'a', 'first', 2);
  assert.equal((await bookOn(core, 'b', 'second', 2)).worker_id, 2n);
  assert.equal((await bookOn(core, 'c', 'second', 1)).worker_id, 1n, 'not bound: no hard-mode rejection');
});

test('a session id longer than 256 bytes is a 400 and books nothing', async () => {
  const { core } = affinityCore();
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: T, session_id: 'x'.repeat(257) }), 400);
  assert.equal(core.reservations.state('a'), undefined);
  await rejects(() => core.select({ model_name: 'model', token_ids: T, session_id: 'x'.repeat(257) }), 400);
});

test('replicated bindings steer new sessions; own echoes, unknown partitions and workers are dropped', async () => {
  const { core } = affinityCore();
  const ev = { modelName: 'model', routingGroup: 'default', sessionId: 'peer', workerId: 2n, dpRank: 0, sequence: 10n, writerId: 5n };
  assert.equal(core.applyAffinityEvent(ev), true);
  assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: T2, session_id: 'peer' })).worker_id, 2n);
  assert.equal(core.applyAffinityEvent({ ...ev, sessionId: 'own', writerId: 77n }), false, 'own writer id');
  assert.equal(core.applyAffinityEvent({ ...ev, sessionId: 'other', routingGroup: 'nope' }), false, 'unknown partition');
  assert.equal(core.applyAffinityEvent({ ...ev, sessionId: 'other', workerId: 9n }), false, 'worker not in the catalog');
  // the replicated binding frees with the booking that holds it
  core.freeReservation('a');
});

test('without a TTL, session fields are only policy inputs and reach custom policies unchanged', async () => {
  let seen: WorkerSelectionContext | undefined;
  const policies = new PolicyRegistry();
  policies.register('spy', () => ({
    filters: [], scorers: [],
    picker: { pick: (ctx) => { seen = ctx; return 0; } },
  }));
  const { core } = makeCore({ DYN_ROUTER_WORKER_SELECTION_POLICY: 'spy' }, { policies });
  core.upsertWorker(worker(1));
  const ctx = { session_id: 'child', parent_session_id: 'root', session_final: false, input_trigger: 'tool_result' as const,
    agent_headers: { 'x-claude-code-request-class': ['subagent', 'second'] } };
  await core.select({ model_name: 'model', token_ids: T, session_id: 'legacy', session_context: ctx });
  assert.deepEqual(seen!.sessionContext(), ctx);
  assert.equal(seen!.sessionId(), 'child');
});

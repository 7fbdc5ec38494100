/**
 * Admission queue in virtual time (Dynamo `lib/kv-router/src/scheduling/queue.rs`; Dynamo `lib/kv-router/src/services/selection/core/run.rs`, `lib/kv-router/src/services/selection/core/tests.rs`): when requests wait, the
 * order they leave in, queue limits (429 with details), advisory bypass, shutdown and drained
 * workers, and the dequeue-time overlap refresh.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QUEUE_LIMIT_POLICY, makeCore, rejects, worker } from './core-helpers.js';
import { parsePolicyConfig, PolicyProfile } from '../../../src/core/select/policy-config.js';
import { AdmissionQueue } from '../../../src/core/select/queue.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { blockHashes } from '../../../src/core/index/hashing.js';

const toks = (n: number, base = 0): number[] => Array.from({ length: n }, (_, i) => base + i + 1);
const W = (id: number, extra: Record<string, unknown> = {}) => worker(id, { max_num_batched_tokens: 4, ...extra });
const settle = () => new Promise((r) => setImmediate(r));

/** Tracks a promise's state without awaiting it. */
function track<T>(p: Promise<T>): { done: () => boolean; value: () => T | undefined; error: () => unknown } {
  let done = false, value: T | undefined, error: unknown;
  p.then((v) => { done = true; value = v; }, (e) => { done = true; error = e; });
  return { done: () => done, value: () => value, error: () => error };
}

test('queueing is off by default: a busy worker still gets requests at once', async () => {
  const { core } = makeCore();
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: toks(8, 100) });
  assert.equal(r.worker_id, 1n);
});

test('with a threshold, a request waits while every rank is busy and runs on prefill_complete', async () => {
  const { core } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const second = track(core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: toks(8, 100) }));
  await settle();
  assert.equal(second.done(), false);
  const l = core.loads()[0];
  assert.deepEqual([l.pending_count, l.pending_isl_tokens], [1, 8]);
  await rejects(() => core.prefillComplete('b'), 404, 'reservation b not found'); // in flight: invisible
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: toks(4) }), 409);
  core.prefillComplete('a');
  await settle();
  assert.equal(second.done(), true);
  assert.equal(second.value()?.selection_id, 'b');
  assert.equal(core.loads()[0].pending_count, 0);
  assert.equal(core.loads()[0].loads[0].active_requests, 2);
});

test('a class with a backlog admits no newcomer ahead of it; query-only select waits too, advisory never', async () => {
  const { core } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const q = track(core.select({ model_name: 'model', token_ids: toks(4, 50) }));
  const adv = await core.select({ model_name: 'model', token_ids: toks(4, 60), advisory: true });
  assert.equal(adv.worker_load?.active_prefill_tokens, 8);
  await settle();
  assert.equal(q.done(), false);
  core.freeReservation('a');
  await settle();
  assert.equal(q.done(), true);
  assert.equal(core.loads()[0].loads[0].active_requests, 0, 'query-only select books nothing');
});

test('fcfs order by arrival; strict_priority first; priority_jump moves ahead', async () => {
  const { core, clock } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const order: string[] = [];
  const go = (id: string, extra: Record<string, unknown>) => {
    clock.advance(1000);
    core.selectAndReserve({ model_name: 'model', selection_id: id, token_ids: toks(8, id.charCodeAt(0) * 100), ...extra })
      .then(() => order.push(id));
  };
  go('p', {});
  go('q', {});
  go('r', { priority_jump: 5 });
  go('s', { strict_priority: 1 });
  await settle();
  for (const id of ['a', 's', 'r', 'p']) { core.prefillComplete(id); await settle(); }
  assert.deepEqual(order, ['s', 'r', 'p', 'q']);
});

test('lcfs (policy queue) serves the newest first; wspt serves the cheapest first', () => {
  const clock = { t: 0, now() { return this.t; } };
  for (const [policy, expected] of [['lcfs', ['c', 'b', 'a']], ['wspt', ['b', 'c', 'a']]] as const) {
    const q = new AdmissionQueue<string>(PolicyProfile.synthetic(1, policy), clock);
    const costs: Record<string, number> = { a: 900, b: 10, c: 100 };
    for (const id of ['a', 'b', 'c']) {
      clock.t += 1000;
      q.enqueue(0, { strictPriority: 0, priorityJump: 0, schedulingCostTokens: costs[id], islTokens: 1, cachedTokens: 0, payload: id });
    }
    const out: string[] = [];
    for (let x = q.pop(() => true); x; x = q.pop(() => true)) out.push(x.payload);
    assert.deepEqual(out, expected, policy);
  }
});

test('policy-class header and queue limits: a rejection is 429 with details, nothing booked', async () => {
  const { core } = makeCore({}, { policyConfig: parsePolicyConfig(QUEUE_LIMIT_POLICY) });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const err = await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'l', token_ids: toks(4, 9) }, { policyClass: 'latency' }), 429);
  assert.deepEqual(err.details, { policy_class: 'latency', limit_kind: 'requests', current: 0, limit: 0 });
  assert.match(err.message, /router policy class "latency" queue requests limit reached \(current=0, limit=0\)/);
  const first = track(core.selectAndReserve({ model_name: 'model', selection_id: 'b', token_ids: toks(8, 10) }));
  await settle();
  const e2 = await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'c', token_ids: toks(8, 20) }), 429);
  assert.deepEqual(e2.details, { policy_class: 'std', limit_kind: 'requests', current: 1, limit: 1 });
  // the rejected id was released: it can be used again
  assert.equal(first.done(), false);
  core.freeReservation('a');
  await settle();
  assert.equal(first.done(), true);
  core.prefillComplete('b');
  assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: 'c', token_ids: toks(4, 30) })).selection_id, 'c');
});

test('a threshold-free policy file does not require max_num_batched_tokens', () => {
  const policyConfig = parsePolicyConfig({ worker_selection: { aggregated: 'default' } });
  const { core } = makeCore({}, { policyConfig });
  assert.equal(core.upsertWorker(worker(1)).lifecycle, 'schedulable');
  assert.throws(() => parsePolicyConfig({ policy_classes: [] }), /root profile must specify/);
  assert.throws(() => parsePolicyConfig({ bogus: 1 }), /unknown field `bogus`/);
});

test('shutdown fails queued selections with 503 and frees their claims', async () => {
  const { core } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const p = core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: toks(8, 9) });
  await settle();
  core.shutdown();
  await rejects(() => p, 503, 'scheduler is shutting down');
  assert.equal(core.reservations.lookup('q'), undefined);
});

test('a worker drained while a pinned request waits for it: 500 no longer schedulable, nothing booked', async () => {
  const { core } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  core.upsertWorker(W(2));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8), pinned_worker: { worker_id: 1, dp_rank: 0 } });
  const p = core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: toks(8, 9), pinned_worker: { worker_id: 1, dp_rank: 0 } });
  await settle();
  core.deleteWorker(1n);
  await rejects(() => p, 500, /no longer schedulable/);
  assert.equal(core.loads()[0].loads.reduce((n, l) => n + l.active_requests, 0), 0);
  assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: toks(4) })).worker_id, 2n);
});

test('an aborted waiter leaves the queue and releases its id', async () => {
  const { core } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const ac = new AbortController();
  const p = core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: toks(8, 9) }, { signal: ac.signal });
  await settle();
  ac.abort();
  await rejects(() => p, 500, /cancelled/);
  assert.equal(core.loads()[0].pending_count, 0);
  core.prefillComplete('a');
  assert.equal((await core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: toks(4) })).selection_id, 'q');
});

test('a request whose client is already gone never queues and books nothing', async () => {
  const { core } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const ac = new AbortController();
  ac.abort();
  await rejects(() => core.selectAndReserve({ model_name: 'model', selection_id: 'q', token_ids: toks(8, 9) }, { signal: ac.signal }), 500, /cancelled/);
  assert.equal(core.loads()[0].pending_count, 0);
  assert.equal(core.reservations.state('q'), undefined);
  core.prefillComplete('a');
  await settle();
  assert.equal(core.loads()[0].loads[0].active_requests, 1, 'only the first booking');
});

test('overlap is refreshed at dequeue after a long wait (the response shows the new cache)', async () => {
  const { core, clock } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1, { max_num_batched_tokens: 2 }));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8, 500) });
  const prompt = toks(8);
  const p = track(core.select({ model_name: 'model', token_ids: prompt }));
  await settle();
  const locals = blockHashes(prompt, 4);
  core.partition('model', 'default')!.index.stored(1n, 0, Tier.Device, null, locals.map((local, i) => ({ ext: 900n + BigInt(i), local })));
  clock.advanceSecs(11);
  core.prefillComplete('a');
  await settle();
  const res = p.value()!;
  assert.equal(res.effective_prefill_tokens, 0);
  assert.deepEqual(res.overlap, { longest_matched: 8, gpu: 8, dp: { '0': 8 }, cpu: 8, disk: 8 });
});

test('the periodic recheck admits waiters whose workers became free without an event', async () => {
  const { core, clock } = makeCore({ DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  core.upsertWorker(W(1));
  await core.selectAndReserve({ model_name: 'model', selection_id: 'a', token_ids: toks(8) });
  const p = track(core.select({ model_name: 'model', token_ids: toks(4, 70) }));
  await settle();
  clock.advanceSecs(301);
  core.maintain(); // the expiry sweep frees 'a' (local); the queue is re-examined
  clock.advanceSecs(60);
  core.maintain();
  await settle();
  assert.equal(p.done(), true);
});

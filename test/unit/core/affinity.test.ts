/**
 * The session binding table (Dynamo `lib/kv-router/src/services/selection/affinity.rs`, Dynamo affinity.rs tests): acquire / commit / lease
 * counting, hard and soft dispatch, idle TTL after the last lease, replicated apply rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionAffinityTable, type AffinityTarget, type AffinityVersion, type Hold } from '../../../src/core/booking/affinity.js';
import { SelectionError } from '../../../src/core/errors.js';
import { ManualClock } from './core-helpers.js';

function table(mode: 'hard' | 'soft' = 'hard', extra: { maxEntries?: number } = {}) {
  const clock = new ManualClock();
  const published: [string, AffinityTarget, AffinityVersion][] = [];
  const t = new SessionAffinityTable({
    ttlSecs: 10, mode, clock, writerId: 5n, sequenceStart: 1n, ...extra,
    publish: (id, target, v) => published.push([id, { ...target }, { ...v }]),
  });
  return { t, clock, published };
}

const at = (workerId: number, dpRank: number) => ({ workerId: BigInt(workerId), dpRank });
const kind = (h: Hold): string => h.kind;

test('a new session initializes, commits with one lease, and later holds take more leases', () => {
  const { t, published } = table();
  const h = t.acquire('s');
  assert.equal(kind(h), 'init');
  assert.equal(t.leaseCount('s'), 0);
  const lease = t.commit(h, at(2, 0))!;
  assert.equal(t.leaseCount('s'), 1);
  assert.deepEqual(t.query('s'), { workerId: 2n, dpRank: 0 });
  assert.deepEqual(published.map(([id, tg, v]) => [id, tg.workerId, v.sequence, v.writerId]), [['s', 2n, 1n, 5n]]);
  const h2 = t.acquire('s');
  assert.equal(kind(h2), 'bound');
  const lease2 = t.commit(h2, at(2, 0))!;
  assert.equal(t.leaseCount('s'), 2);
  t.release(lease);
  t.release(lease);
  assert.equal(t.leaseCount('s'), 1, 'a lease releases once');
  t.release(lease2);
  assert.equal(t.leaseCount('s'), 0);
});

test('the idle TTL starts at the last release; a leased binding never expires', () => {
  const { t, clock } = table();
  const lease = t.commit(t.acquire('s'), at(1, 0))!;
  clock.advanceSecs(100);
  assert.deepEqual(t.query('s'), { workerId: 1n, dpRank: 0 }, 'leased: still bound after 10x the TTL');
  assert.equal(t.reap(), 0);
  t.release(lease);
  clock.advanceSecs(9.9);
  assert.ok(t.query('s'));
  clock.advanceSecs(0.2);
  assert.equal(t.query('s'), undefined, 'idle past the TTL');
  assert.equal(kind(t.acquire('s')), 'init', 'an idled binding re-initializes');
  assert.equal(t.reap(), 0, 'the re-initialized entry is not idle');
});

test('reap removes idle bindings past their TTL only', () => {
  const { t, clock } = table();
  t.release(t.commit(t.acquire('a'), at(1, 0))!);
  const live = t.commit(t.acquire('b'), at(1, 0))!;
  clock.advanceSecs(11);
  assert.equal(t.reap(), 1);
  assert.equal(t.size, 1);
  t.release(live);
});

test('hard mode: a bound session dispatched elsewhere is a 400 and the binding is dropped', () => {
  const { t } = table('hard');
  t.commit(t.acquire('s'), at(1, 0));
  const h = t.acquire('s');
  assert.throws(() => t.commit(h, at(1, 1)), (e: unknown) => e instanceof SelectionError && e.status === 400 && /bound to DP rank 0, not 1/.test(e.message));
  assert.equal(t.query('s'), undefined);
  assert.equal(kind(t.acquire('s')), 'init', 'the next request re-initializes');
  const h2 = t.commit(t.acquire('x'), at(3, 0));
  assert.ok(h2);
  assert.throws(() => t.commit(t.acquire('x'), at(4, 0)), /bound to worker 3, not 4/);
});

test('soft mode: the binding follows the dispatch and a worker-only binding stays worker-only', () => {
  const { t, published, clock } = table('soft');
  t.commit(t.acquire('s'), at(1, 0));
  const lease = t.commit(t.acquire('s'), at(2, 1))!;
  assert.deepEqual(t.query('s'), { workerId: 2n, dpRank: 1 });
  assert.equal(published.at(-1)![1].workerId, 2n);
  assert.ok(published.at(-1)![2].sequence > published[0][2].sequence, 'a rebind is a newer version');
  t.release(lease);
  // a worker-only binding (from a peer) follows the worker but stays worker-only
  clock.advanceSecs(1);
  t.applyRemote('w', { workerId: 7n, dpRank: null }, { sequence: 100n, writerId: 9n });
  t.commit(t.acquire('w'), at(8, 3));
  assert.deepEqual(t.query('w'), { workerId: 8n, dpRank: null });
});

test('a session being initialized makes others wait until it commits or is abandoned', async () => {
  const { t } = table();
  const init = t.acquire('s');
  const w = t.acquire('s');
  assert.equal(w.kind, 'wait');
  let woke = false;
  void (w as { settled: Promise<void> }).settled.then(() => { woke = true; });
  t.abandon(init);
  await Promise.resolve();
  assert.ok(woke);
  assert.equal(t.size, 0, 'an abandoned initialization leaves nothing behind');
  const again = t.acquire('s');
  const w2 = t.acquire('s') as { kind: 'wait'; settled: Promise<void> };
  t.commit(again, at(1, 0));
  await w2.settled;
  assert.equal(kind(t.acquire('s')), 'bound');
});

test('a full table routes unpinned; ids longer than 256 bytes are a 400', () => {
  const { t } = table('hard', { maxEntries: 2 });
  t.commit(t.acquire('a'), at(1, 0));
  t.acquire('b');
  assert.equal(kind(t.acquire('c')), 'full');
  assert.equal(t.commit({ kind: 'full' }, at(1, 0)), null);
  assert.throws(() => t.acquire('x'.repeat(257)), (e: unknown) => e instanceof SelectionError && e.status === 400);
  assert.throws(() => t.query('é'.repeat(129)), /258 bytes/, 'bytes, not characters');
  t.acquire('é'.repeat(128));
});

test('invalidate drops the binding a lease holds, but not a newer one', () => {
  const { t } = table();
  const lease = t.commit(t.acquire('s'), at(1, 0))!;
  t.invalidate(lease);
  assert.equal(t.size, 0);
  const l2 = t.commit(t.acquire('s'), at(1, 0))!;
  t.applyRemote('s', { workerId: 2n, dpRank: 0 }, { sequence: 1000n, writerId: 1n });
  t.invalidate(l2);
  assert.deepEqual(t.query('s'), { workerId: 2n, dpRank: 0 }, 'the newer replicated binding stays');
});

test('replicated apply rules: insert, ignore initializing, replace expired, refresh, newer wins, else ignore', () => {
  const { t, clock } = table();
  const v = (sequence: number, writerId = 9) => ({ sequence: BigInt(sequence), writerId: BigInt(writerId) });
  assert.equal(t.applyRemote('a', at(1, 0), v(10)), 'inserted');
  assert.equal(t.leaseCount('a'), 0, 'inserted idle');
  clock.advanceSecs(9);
  assert.equal(t.applyRemote('a', at(1, 0), v(10)), 'refreshed', 'same target and version');
  clock.advanceSecs(9);
  assert.ok(t.query('a'), 'the refresh restarted the idle TTL');
  assert.equal(t.applyRemote('a', at(2, 0), v(9)), 'ignored_conflict', 'older version, other target');
  assert.equal(t.applyRemote('a', at(2, 0), v(10, 10)), 'replaced_newer', 'ties broken by writer id');
  assert.deepEqual(t.query('a'), { workerId: 2n, dpRank: 0 });
  clock.advanceSecs(11);
  assert.equal(t.applyRemote('a', at(3, 0), v(1)), 'replaced_expired');
  t.acquire('i');
  assert.equal(t.applyRemote('i', at(1, 0), v(50)), 'ignored_initializing');
  assert.equal(t.applyRemote('y'.repeat(300), at(1, 0), v(50)), 'rejected_session_id');
  // a replicated sequence moves our own next version past it
  const lease = t.commit(t.acquire('n'), at(1, 0))!;
  assert.ok(lease.version.sequence > 50n);
});

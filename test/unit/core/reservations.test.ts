/** The process-wide reservation index (Dynamo `lib/kv-router/src/services/selection/core/reservations.rs`): claims, bookings, mirrors, sweep. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionError } from '../../../src/core/errors.js';
import { ReservationIndex } from '../../../src/core/booking/reservations.js';

function is409(id: string) {
  return (err: unknown) => err instanceof SelectionError && err.status === 409 && err.code === 'SEL_DUPLICATE_SELECTION'
    && err.message === `selection ${id} is already reserved or being reserved`;
}

test('a claimed or booked id is a 409 in any partition', () => {
  const ix = new ReservationIndex();
  const t = ix.claim('r1', 'm/a');
  assert.throws(() => ix.claim('r1', 'm/b'), is409('r1'), 'in flight, another partition');
  assert.throws(() => ix.claim('r1', 'm/a'), is409('r1'), 'in flight, same partition');
  ix.commit(t, 1n, 0);
  assert.throws(() => ix.claim('r1', 'm/b'), is409('r1'), 'booked');
  ix.mirror('r2', 'm/a', 2n, 0);
  assert.throws(() => ix.claim('r2', 'm/b'), is409('r2'), 'mirrored');
});

test('a claim is invisible to lookup and remove', () => {
  const ix = new ReservationIndex();
  const t = ix.claim('r', 'p');
  assert.equal(ix.lookup('r'), undefined);
  assert.equal(ix.remove('r'), undefined, 'a DELETE racing an in-flight booking does not cancel it');
  assert.deepEqual(ix.state('r'), { kind: 'claim', partitionKey: 'p' });
  assert.equal(ix.size(), 1);
  ix.commit(t, 3n, 1);
  assert.deepEqual(ix.lookup('r'), { partitionKey: 'p', workerId: 3n, dpRank: 1, mirrored: false });
});

test('commit then lookup carries the lease; a stale token cannot commit', () => {
  const ix = new ReservationIndex<{ session: string }>();
  const t = ix.claim('r', 'p');
  ix.commit(t, 7n, 2, { session: 's' });
  assert.deepEqual(ix.lookup('r'), { partitionKey: 'p', workerId: 7n, dpRank: 2, mirrored: false, lease: { session: 's' } });
  assert.deepEqual(ix.state('r'), { kind: 'booked', partitionKey: 'p', workerId: 7n, dpRank: 2, mirrored: false, lease: { session: 's' } });
  assert.throws(() => ix.commit(t, 7n, 2), /no longer held/);
  assert.equal(ix.lookup('unknown'), undefined);
});

test('release frees the id; a stale release is a no-op', () => {
  const ix = new ReservationIndex();
  const t1 = ix.claim('r', 'p');
  ix.release(t1);
  assert.equal(ix.size(), 0);
  const t2 = ix.claim('r', 'q');
  ix.release(t1);
  assert.deepEqual(ix.state('r'), { kind: 'claim', partitionKey: 'q' }, 'the old token does not drop the new claim');
  ix.commit(t2, 1n, 0);
  ix.release(t2);
  assert.ok(ix.lookup('r'), 'releasing a committed token does not drop the booking');
});

test('remove returns the row once', () => {
  const ix = new ReservationIndex<string>();
  ix.commit(ix.claim('r', 'p'), 1n, 0, 'lease');
  assert.deepEqual(ix.remove('r'), { partitionKey: 'p', workerId: 1n, dpRank: 0, mirrored: false, lease: 'lease' });
  assert.equal(ix.remove('r'), undefined);
  assert.equal(ix.lookup('r'), undefined);
  ix.commit(ix.claim('r', 'p'), 2n, 0);
  assert.equal(ix.lookup('r')?.workerId, 2n, 'the id is reusable after free');
});

test('mirror: inserts, replaces a stale row of the same partition, refuses claims and other partitions', () => {
  const ix = new ReservationIndex();
  assert.equal(ix.mirror('a', 'p', 1n, 0), true);
  assert.deepEqual(ix.lookup('a'), { partitionKey: 'p', workerId: 1n, dpRank: 0, mirrored: true });

  ix.commit(ix.claim('b', 'p'), 1n, 0, 'lease');
  assert.equal(ix.mirror('b', 'p', 2n, 1), true, 'a peer admission replaces a stale local row');
  assert.deepEqual(ix.lookup('b'), { partitionKey: 'p', workerId: 2n, dpRank: 1, mirrored: true });
  assert.equal(ix.mirror('a', 'p', 3n, 0), true, 'and a stale mirror');
  assert.equal(ix.lookup('a')?.workerId, 3n);

  ix.claim('c', 'p');
  assert.equal(ix.mirror('c', 'p', 1n, 0), false, 'in-flight claim kept');
  assert.deepEqual(ix.state('c'), { kind: 'claim', partitionKey: 'p' });

  ix.commit(ix.claim('d', 'p'), 1n, 0);
  assert.equal(ix.mirror('d', 'q', 9n, 0), false, 'row of another partition kept');
  assert.deepEqual(ix.lookup('d'), { partitionKey: 'p', workerId: 1n, dpRank: 0, mirrored: false });

  assert.ok(ix.remove('a'), 'a peer Free removes the mirror');
  assert.equal(ix.lookup('a'), undefined);
});

test('idsOfWorker lists booked rows of every partition, optionally one rank', () => {
  const ix = new ReservationIndex();
  ix.commit(ix.claim('a', 'p'), 1n, 0);
  ix.commit(ix.claim('b', 'q'), 1n, 1);
  ix.mirror('c', 'p', 1n, 1);
  ix.commit(ix.claim('d', 'p'), 2n, 0);
  ix.claim('e', 'p');
  assert.deepEqual(ix.idsOfWorker(1n).sort(), ['a', 'b', 'c']);
  assert.deepEqual(ix.idsOfWorker(1n, 1).sort(), ['b', 'c']);
  assert.deepEqual(ix.idsOfWorker(1n, 0), ['a']);
  assert.deepEqual(ix.idsOfWorker(3n), []);
});

test('sweep drops rows whose booking vanished, returns them, and leaves claims', () => {
  const ix = new ReservationIndex<string>();
  ix.commit(ix.claim('a', 'p'), 1n, 0, 'la');
  ix.commit(ix.claim('b', 'p'), 1n, 0, 'lb');
  ix.mirror('c', 'q', 2n, 0);
  ix.claim('d', 'p');
  const seen: string[] = [];
  const dropped = ix.sweep((id, row) => { seen.push(id); return id === 'b' || row.partitionKey === 'x'; });
  assert.deepEqual(seen.sort(), ['a', 'b', 'c'], 'claims are not offered');
  assert.deepEqual(dropped, [
    { id: 'a', row: { partitionKey: 'p', workerId: 1n, dpRank: 0, mirrored: false, lease: 'la' } },
    { id: 'c', row: { partitionKey: 'q', workerId: 2n, dpRank: 0, mirrored: true } },
  ]);
  assert.equal(ix.size(), 2);
  assert.ok(ix.lookup('b'));
  assert.deepEqual(ix.sweep(() => true), []);
});

test('how a booking ended is remembered for the window, bounded in count and bytes, and only while the id is not held again', () => {
  let now = 0;
  const clock = { now: () => now };
  const ix = new ReservationIndex({ clock, ttlSecs: 300, maxEntries: 3, maxBytes: 1000 });
  const freed = { kind: 'freed', byPeer: false } as const;
  for (const id of ['a', 'b', 'c', 'd']) {
    ix.commit(ix.claim(id, 'p'), 1n, 0);
    ix.remove(id, freed);
  }
  assert.equal(ix.endOf('a'), undefined, 'the oldest of four went past the count of three');
  assert.deepEqual(['b', 'c', 'd'].map((id) => ix.notFound(id).message),
    ['reservation b was already freed', 'reservation c was already freed', 'reservation d was already freed']);
  // booked again: the old end no longer speaks for it; claimed: neither
  const t = ix.claim('d', 'p');
  assert.equal(ix.notFound('d').message, 'reservation d not found');
  ix.release(t);
  // the byte budget bounds long ids: one of 900 bytes pushes out the others, one over the budget is not kept
  ix.commit(ix.claim('x'.repeat(900), 'p'), 1n, 0);
  ix.remove('x'.repeat(900), { kind: 'expired', afterSecs: 300 });
  assert.deepEqual(['b', 'c', 'd'].map((id) => ix.endOf(id)), [undefined, undefined, undefined]);
  assert.equal(ix.notFound('x'.repeat(900)).message, `reservation ${'x'.repeat(900)} expired after 300 s without being freed`);
  ix.commit(ix.claim('y'.repeat(1000), 'p'), 1n, 0);
  ix.remove('y'.repeat(1000), freed);
  assert.equal(ix.endOf('y'.repeat(1000)), undefined);
  // the window: age 300 s is remembered, later is not
  ix.commit(ix.claim('w', 'p'), 2n, 0);
  ix.remove('w', { kind: 'worker', workerId: 2n, dpRank: 0, change: 'removed' });
  now = 300_000;
  assert.equal(ix.notFound('w').message, 'reservation w was freed when its worker 2 was removed');
  now += 1;
  assert.equal(ix.notFound('w').message, 'reservation w not found');
  // without limits (the default), nothing is remembered
  const plain = new ReservationIndex();
  plain.commit(plain.claim('z', 'p'), 1n, 0);
  plain.remove('z', freed);
  assert.equal(plain.notFound('z').message, 'reservation z not found');
});

test('issue 29: a mirrored row keeps its owner; the observer sees every row change with the row before and after', () => {
  const ix = new ReservationIndex();
  const seen: string[] = [];
  const show = (r: { owner?: bigint; mirrored: boolean } | undefined) => (r === undefined ? '-' : r.mirrored ? `m${r.owner}` : 'local');
  ix.observe((id, before, after) => seen.push(`${id}:${show(before)}>${show(after)}`));
  const t = ix.claim('a', 'p');
  assert.deepEqual(seen, [], 'a claim is no row');
  ix.commit(t, 1n, 0);
  ix.mirror('b', 'p', 1n, 0, 7n);
  assert.equal(ix.lookup('b')!.owner, 7n);
  ix.mirror('a', 'p', 2n, 0, 8n); // a peer's admission replaces the local row
  ix.remove('b');
  ix.sweep(() => false);
  assert.deepEqual(seen, ['a:->local', 'b:->m7', 'a:local>m8', 'b:m7>-', 'a:m8>-']);
  ix.mirror('c', 'p', 1n, 0);
  assert.deepEqual([...ix.bookedRows()].map(([id]) => id), ['c']);
  ix.observe(null);
  ix.remove('c');
  assert.equal(seen.length, 6);
});

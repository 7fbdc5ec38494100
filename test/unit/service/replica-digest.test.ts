/** The digest of what a replica holds (replica-digest.ts): order-free, foldable, following every row change. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DigestBook, GroupSummary, bucketsFor, diffBuckets, groupKey, slotOf } from '../../../src/service/replica-digest.js';
import { ReservationIndex } from '../../../src/core/booking/reservations.js';

const summary = (ids: string[], worker = 1n): GroupSummary => {
  const g = new GroupSummary('p', 1n);
  for (const id of ids) g.add(id, worker, 0);
  return g;
};
const ids = Array.from({ length: 500 }, (_, i) => `req-${i}`);

test('the same rows give the same digest in any order; a removed row undoes its addition', () => {
  const a = summary(ids), b = summary([...ids].reverse());
  assert.deepEqual(a.folded(64), b.folded(64));
  b.add('extra', 1n, 0);
  assert.notDeepEqual(a.folded(64), b.folded(64));
  b.add('extra', 1n, 0, -1);
  assert.deepEqual(a.folded(64), b.folded(64));
  assert.notDeepEqual(summary(ids, 2n).folded(64), a.folded(64), 'the worker is part of a row');
});

test('folding to n buckets is the digest of n buckets; a changed row shows in its own bucket only', () => {
  const a = summary(ids);
  for (const n of [1, 2, 8, 64]) {
    const folded = a.folded(n);
    assert.equal(folded.filter((_, i) => i % 4 === 1).reduce((x, y) => x + y, 0), ids.length, `n=${n}`);
    const b = summary(ids.filter((id) => id !== 'req-7'));
    assert.deepEqual(diffBuckets(b.folded(n), folded), [slotOf('req-7') & (n - 1)], `n=${n}`);
  }
  assert.deepEqual(diffBuckets([], a.folded(4)), [0, 1, 2, 3]);
  assert.deepEqual([bucketsFor(0), bucketsFor(32), bucketsFor(33), bucketsFor(500), bucketsFor(1e6)], [1, 1, 2, 16, 64]);
});

test('the book follows the reservation index: commits, mirrors, removals, a moved owner; no row hashed twice', () => {
  const idx = new ReservationIndex();
  idx.commit(idx.claim('local', 'p'), 1n, 0);
  const book = new DigestBook({ replicaId: 9n, reservations: idx });
  assert.deepEqual([...book.current().keys()], [groupKey('p', 9n)]);
  idx.mirror('m1', 'p', 1n, 0, 5n);
  idx.mirror('m2', 'p', 1n, 0, 5n);
  assert.equal(book.current().get(groupKey('p', 5n))!.total, 2);
  idx.mirror('m2', 'p', 1n, 0, 6n); // admitted again elsewhere: it moves group
  assert.deepEqual([book.current().get(groupKey('p', 5n))!.total, book.current().get(groupKey('p', 6n))!.total], [1, 1]);
  idx.remove('m1');
  idx.sweep((id) => id !== 'm2');
  assert.deepEqual([...book.current().keys()], [groupKey('p', 9n)], 'empty groups go');
  assert.deepEqual(book.current().get(groupKey('p', 9n))!.folded(1), summary(['local']).folded(1));
  const hashed = book.hashed;
  book.current();
  assert.equal(book.hashed, hashed);
  book.detach();
  idx.mirror('after', 'p', 1n, 0, 5n);
  assert.equal(book.hashed, hashed, 'detached');
});

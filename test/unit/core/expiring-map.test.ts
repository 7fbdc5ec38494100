/** The bounded map under the pending-selection cache and the record of ended reservations: age, count, bytes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExpiringMap, utf8Length } from '../../../src/core/booking/expiring-map.js';

class ManualClock { t = 0; now(): number { return this.t; } }

test('age: ttl is still live, past it the entry is gone (on get, and swept oldest-first on set)', () => {
  const clock = new ManualClock();
  const m = new ExpiringMap<number>({ clock, ttlSecs: 10, maxEntries: 100, maxBytes: 1000 });
  m.set('a', 1, 1);
  clock.t = 5_000;
  m.set('b', 2, 1);
  clock.t = 10_000;
  assert.equal(m.get('a'), 1);
  clock.t = 10_001;
  assert.equal(m.get('a'), undefined);
  assert.equal(m.size, 1, 'dropped by the get');
  clock.t = 15_001;
  m.set('c', 3, 1);
  assert.deepEqual([m.size, m.bytes, m.get('b'), m.peekAnyAge('b')], [1, 1, undefined, undefined]);
});

test('count and bytes: the oldest go first; an entry over the whole budget is not kept but displaces its key', () => {
  const clock = new ManualClock();
  const m = new ExpiringMap<string>({ clock, ttlSecs: 60, maxEntries: 2, maxBytes: 10 });
  assert.equal(m.set('a', 'A', 4), true);
  m.set('b', 'B', 4);
  m.set('c', 'C', 4);
  assert.deepEqual([m.get('a'), m.get('b'), m.get('c'), m.size, m.bytes], [undefined, 'B', 'C', 2, 8]);
  m.set('d', 'D', 9);
  assert.deepEqual([m.get('b'), m.get('c'), m.get('d'), m.bytes], [undefined, undefined, 'D', 9]);
  assert.equal(m.set('d', 'too big', 11), false);
  assert.deepEqual([m.get('d'), m.size, m.bytes], [undefined, 0, 0]);
  // a re-set key moves to the newest position
  m.set('x', 'X', 1);
  m.set('y', 'Y', 1);
  m.set('x', 'X2', 1);
  m.set('z', 'Z', 1);
  assert.deepEqual([m.get('x'), m.get('y'), m.get('z')], ['X2', undefined, 'Z']);
  assert.throws(() => new ExpiringMap({ clock, ttlSecs: 1, maxEntries: -1, maxBytes: 1 }), /^RangeError: maxEntries must be a non-negative integer, got -1$/);
});

test('utf8Length counts UTF-8 bytes without encoding', () => {
  for (const s of ['', 'abc', 'é', '€', '😀', 'a\ud800b']) assert.equal(utf8Length(s), new TextEncoder().encode(s).length, s);
});

test('issue 29: entries dropped by the count or byte limit before their age are counted (not those that expire)', () => {
  const clock = { t: 0, now() { return this.t; } };
  const m = new ExpiringMap<number>({ clock, ttlSecs: 10, maxEntries: 2, maxBytes: 100 });
  m.set('a', 1, 10);
  m.set('b', 2, 10);
  m.set('c', 3, 10);
  m.set('d', 4, 90);
  assert.equal(m.evictions, 2);
  clock.t = 20_000;
  m.set('e', 5, 10);
  assert.equal(m.evictions, 2, 'expired entries are not evictions');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrefixCache } from '../../../src/sim/prefix-cache.js';
import { EventQueue, VirtualClock } from '../../../src/sim/event-queue.js';

test('prefix match, pinning and leaf-first LRU eviction', () => {
  const c = new PrefixCache(5);
  assert.deepEqual(c.acquire([1, 2, 3]), []);
  c.release([1, 2, 3], 0);
  assert.equal(c.matchPrefix([1, 2, 9, 3]), 2);
  // a chain sharing the root: 3 is the least recent leaf, then 2, then 1
  assert.deepEqual(c.acquire([1, 4, 5]), []);
  assert.equal(c.used, 5);
  assert.deepEqual(c.acquire([6]), [3]);
  assert.deepEqual(c.addOutputBlock(), [2]);
  assert.equal(c.evicted, 2);
  // everything left is pinned: run over capacity rather than preempt
  assert.deepEqual(c.addOutputBlock(), []);
  assert.equal(c.used, 6);
  c.release([1, 4, 5], 2);
  c.release([6], 0);
  assert.equal(c.used, 4);
});

test('a request never evicts the blocks it hits', () => {
  const c = new PrefixCache(3);
  c.acquire([1, 2, 3]);
  c.release([1, 2, 3], 0);
  assert.deepEqual(c.acquire([1, 2, 7]), [3]);
  assert.ok(c.has(1) && c.has(2) && c.has(7));
});

test('events run in time order, ties in scheduling order, and advance the clock', () => {
  const clock = new VirtualClock();
  const q = new EventQueue(clock);
  const seen: string[] = [];
  q.at(5, () => seen.push(`a@${clock.t}`));
  q.at(1, () => { seen.push(`b@${clock.t}`); q.after(4, () => seen.push(`c@${clock.t}`)); });
  q.at(5, () => seen.push(`d@${clock.t}`));
  for (let i = 0; i < 20; i++) q.at(3 + (i % 7), () => {});
  while (q.runNext());
  assert.deepEqual(seen, ['b@1', 'a@5', 'd@5', 'c@5']);
  assert.equal(q.peekTime(), Infinity);
});

/** Tombstones (replica-tombstones.ts): known frees stay known, age decides stale vs reused ids, limits count their evictions. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TOMBSTONE_SLACK_MS, Tombstones } from '../../../src/service/replica-tombstones.js';
import { ManualClock } from '../core/core-helpers.js';

test('a tombstone remembers when and whether this replica held the id; known is never downgraded', () => {
  const clock = new ManualClock();
  const t = new Tombstones(clock, { ttlSecs: 10, maxEntries: 10, maxBytes: 1 << 20 });
  t.record('a', true);
  clock.advance(100);
  t.record('a', false);
  assert.deepEqual(t.get('a'), { at: 100, known: true });
  clock.advance(10_001);
  assert.equal(t.get('a'), undefined, 'gone after its age');
});

test('freedAfter: a booking admitted before the free (older than the tombstone) is the freed one; a younger one is new', () => {
  const clock = new ManualClock();
  const t = new Tombstones(clock, { ttlSecs: 300, maxEntries: 10, maxBytes: 1 << 20 });
  clock.advance(50_000);
  t.record('x', true);
  clock.advance(20_000); // the tombstone is 20 s old
  assert.equal(t.freedAfter('x', 25_000), true);
  assert.equal(t.freedAfter('x', 20_000 - TOMBSTONE_SLACK_MS), true, 'within the slack: taken as the freed booking');
  assert.equal(t.freedAfter('x', 5_000), false, 'booked again after the free');
  assert.equal(t.freedAfter('never', 1e9), false);
});

test('the count limit evicts the oldest and counts it', () => {
  const t = new Tombstones(new ManualClock(), { ttlSecs: 300, maxEntries: 3, maxBytes: 1 << 20 });
  for (const id of ['a', 'b', 'c', 'd', 'e']) t.record(id, false);
  assert.deepEqual([t.size, t.evictions, t.get('a'), t.get('e')?.known], [3, 2, undefined, false]);
});

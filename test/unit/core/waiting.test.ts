/**
 * The waiting queue of each rank row (src/core/load/waiting.ts): bookings that await their first
 * token, the oldest one's age and the busy fraction, through ActiveLoads as the service drives it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActiveLoads } from '../../../src/core/load/loads.js';
import { Waiting } from '../../../src/core/load/waiting.js';
import { seededRng } from '../../../src/core/random.js';
import { ManualClock } from './core-helpers.js';

const seq = new Uint32Array(8);
const input = { seq, nBlocks: 1, trackPrefillTokens: true, prefillTokens: 100, islTokens: 100 };

function oneRank(): { clock: ManualClock; l: ActiveLoads; row: number } {
  const clock = new ManualClock();
  const l = new ActiveLoads({ blockSize: 16, clock, rng: seededRng(1), expirySecs: 300 });
  l.addRank(1n, 0);
  return { clock, l, row: l.rowOf(1n, 0) };
}

test('waiting: the oldest is the oldest still waiting; one freed before its first token leaves the queue and the count', () => {
  const { clock, l, row } = oneRank();
  l.book('a', 1n, 0, input);
  clock.advance(1000);
  l.book('b', 1n, 0, input);
  clock.advance(1000);
  l.book('c', 1n, 0, input);
  assert.equal(l.waiting.oldestSecs(row, clock.now()), 2, 'a has waited 2 s');
  l.free('a'); // freed before its first token (a cancelled request)
  assert.equal(l.waiting.count[row], 2);
  assert.equal(l.waiting.oldestSecs(row, clock.now()), 1, 'b is the oldest now');
  l.prefillComplete('b');
  l.free('b'); // freed after its first token: the count does not move again
  assert.equal(l.waiting.count[row], 1);
  assert.equal(l.waiting.oldestSecs(row, clock.now()), 0, 'c was booked now');
  l.book('a', 1n, 0, input); // the id again: a new booking at the back
  clock.advance(500);
  assert.equal(l.waiting.count[row], 2);
  assert.equal(l.waiting.oldestSecs(row, clock.now()), 0.5);
});

test('waiting: a removed rank leaves nothing waiting on its row, and the rank that gets the row starts idle', () => {
  const { clock, l, row } = oneRank();
  l.book('a', 1n, 0, input);
  clock.advance(5000);
  assert.ok(l.waiting.busyFraction(row, clock.now()) > 0.3);
  assert.deepEqual(l.removeRank(1n, 0), ['a']);
  l.addRank(2n, 0);
  assert.equal(l.rowOf(2n, 0), row, 'the row is reused');
  assert.deepEqual([l.waiting.count[row], l.waiting.oldestSecs(row, clock.now()), l.waiting.busyFraction(row, clock.now())], [0, 0, 0]);
  l.free('a'); // gone with its rank: nothing to undo
  assert.equal(l.waiting.count[row], 0);
});

test('waiting: done is idempotent, and rows grown later keep the state of earlier ones', () => {
  const w = new Waiting();
  w.grow(2);
  w.reset(0, 0);
  w.reset(1, 0);
  const x = { admittedAt: 0, waiting: false };
  w.add(1, x, 0);
  w.done(1, x, 1000);
  w.done(1, x, 2000);
  assert.equal(w.count[1], 0);
  const busy = w.busyFraction(1, 1000);
  assert.ok(Math.abs(busy - (1 - Math.exp(-0.1))) < 1e-12, 'busy for the 1 s it waited, of a 10 s window');
  w.add(1, { admittedAt: 1000, waiting: false }, 1000);
  w.grow(40);
  assert.equal(w.count[1], 1);
  assert.equal(w.oldestSecs(1, 3000), 2);
  assert.equal(w.busyFraction(1, 1000), busy);
  assert.equal(w.count[39], 0);
});

/**
 * Booking recorder with TTL retention (Dynamo `lib/kv-router/src/approx.rs`): synthetic Stored events with public
 * sequence hashes as engine hashes, refresh on re-recording, expiry, and pruning to 80% of the
 * max size, earliest expiry first and deepest first among equals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApproxIndex } from '../../../src/core/index/approx.js';
import { KvIndex } from '../../../src/core/index/kv-index.js';
import { sequenceHashes } from '../../../src/core/index/hashing.js';
import { ManualClock } from './core-helpers.js';

const W = { overlapScoreCredit: 1, hostCacheHitWeight: 0.75, diskCacheHitWeight: 0.25 };
const locals = (base: number, n: number) => BigUint64Array.from({ length: n }, (_, i) => BigInt(base * 1000 + i + 1));
const device = (ix: KvIndex, q: BigUint64Array, w = 1n) => ix.match(Array.from(q), 0, W).find((r) => r.workerId === w)?.device ?? 0;

test('a recorded booking is matchable, uses public sequence hashes as engine hashes, and expires after the TTL', () => {
  const clock = new ManualClock();
  const ix = new KvIndex(4);
  const a = new ApproxIndex(ix, { clock, ttlSecs: 120 });
  const q = locals(1, 3);
  a.record(1n, 0, q);
  assert.equal(device(ix, q), 3);
  const seq = sequenceHashes(Array.from(q));
  assert.deepEqual(ix.dumpEvents()[0].event.data, { stored: { parent_hash: null, start_position: null,
    blocks: Array.from(q, (l, i) => ({ block_hash: seq[i], tokens_hash: l, mm_extra_info: null })) } });
  clock.advanceSecs(100);
  a.record(1n, 0, q.subarray(0, 1));
  clock.advanceSecs(30);
  a.expire();
  assert.equal(device(ix, q), 1, 'the refreshed first block outlives the others');
  clock.advanceSecs(100);
  a.expire();
  assert.equal(device(ix, q), 0);
  assert.equal(a.size, 0);
});

test('over the max size, pruning keeps floor(max * 0.8): earliest expiry first, deepest first among equals', () => {
  const clock = new ManualClock();
  const ix = new KvIndex(4);
  const a = new ApproxIndex(ix, { clock, ttlSecs: 120, maxTreeSize: 10 });
  const q1 = locals(1, 6), q2 = locals(2, 5);
  a.record(1n, 0, q1);
  clock.advanceSecs(1);
  a.record(2n, 0, q2); // 11 > 10 -> prune to 8: drop q1's deepest three
  assert.equal(a.size, 8);
  assert.equal(device(ix, q1, 1n), 3);
  assert.equal(device(ix, q2, 2n), 5);
});

test('removeRank forgets a rank\'s records', () => {
  const clock = new ManualClock();
  const ix = new KvIndex(4);
  const a = new ApproxIndex(ix, { clock, ttlSecs: 120 });
  a.record(1n, 0, locals(1, 2));
  a.record(2n, 0, locals(1, 2));
  a.removeRank(1n, 0);
  assert.equal(a.size, 2);
  assert.equal(device(ix, locals(1, 2), 1n), 0);
  assert.equal(device(ix, locals(1, 2), 2n), 2);
});

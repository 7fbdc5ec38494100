/**
 * Active-load accounting (Dynamo `lib/kv-router/src/sequences/`): prompt blocks deduplicated by sequence hash per rank,
 * prefill tokens until prefill completes, output blocks with decay weights, free, the prefix
 * overlap depth, rank removal, and the absolute-age expiry guard. Plus the u64 count table it
 * stands on, checked against a Map<bigint> model on random operations.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActiveLoads, type BookingInput } from '../../../src/core/load/loads.js';
import { U64Counts } from '../../../src/core/load/u64-counts.js';
import { seededRng } from '../../../src/core/random.js';
import { ManualClock } from './core-helpers.js';

const words = (hashes: bigint[]): Uint32Array => {
  const a = BigUint64Array.from(hashes);
  return new Uint32Array(a.buffer);
};
const input = (hashes: bigint[], prefill = 0, track = true): BookingInput =>
  ({ seq: words(hashes), nBlocks: hashes.length, trackPrefillTokens: track, prefillTokens: prefill, islTokens: hashes.length * 4 });

function loads(o: { expirySecs?: number } = {}) {
  const clock = new ManualClock();
  const l = new ActiveLoads({ blockSize: 4, clock, rng: seededRng(1), expirySecs: o.expirySecs ?? 300 });
  l.addRank(1n, 0);
  l.addRank(2n, 0);
  return { l, clock };
}

test('shared prompt blocks count once per rank; prefill tokens until prefill completes; free removes everything', () => {
  const { l } = loads();
  assert.ok(l.book('a', 1n, 0, input([11n, 12n, 13n], 12)));
  assert.ok(l.book('b', 1n, 0, input([11n, 12n, 99n], 5)));
  assert.deepEqual(l.rankLoad(1n, 0), { activePrefillTokens: 17, activeDecodeBlocks: 4, activeRequests: 2 });
  assert.equal(l.book('a', 2n, 0, input([1n])), false, 'duplicate id');
  assert.equal(l.book('c', 3n, 0, input([1n])), false, 'unknown rank: bookings never create ranks');
  l.prefillComplete('a');
  l.prefillComplete('a');
  assert.equal(l.rankLoad(1n, 0).activePrefillTokens, 5, 'idempotent');
  l.free('b');
  assert.deepEqual(l.rankLoad(1n, 0), { activePrefillTokens: 0, activeDecodeBlocks: 3, activeRequests: 1 });
  assert.equal(l.free('b'), false);
  l.free('a');
  assert.deepEqual(l.rankLoad(1n, 0), { activePrefillTokens: 0, activeDecodeBlocks: 0, activeRequests: 0 });
  assert.deepEqual(l.rankLoad(2n, 0), { activePrefillTokens: 0, activeDecodeBlocks: 0, activeRequests: 0 });
});

test('untracked prefill books no tokens; zero prefill is complete from the start', () => {
  const { l } = loads();
  l.book('a', 1n, 0, input([1n, 2n], 8, false));
  l.book('b', 1n, 0, input([3n], 0));
  assert.equal(l.rankLoad(1n, 0).activePrefillTokens, 0);
  assert.equal(l.rankLoad(1n, 0).activeDecodeBlocks, 3);
});

test('hashes above 2^53 stay exact: distinct hashes that agree in their float value are distinct blocks', () => {
  const { l } = loads();
  const h = (1n << 63n) + 1n;
  l.book('a', 1n, 0, input([h, h + 1n, 0xffffffffffffffffn]));
  l.book('b', 1n, 0, input([h + 2n]));
  assert.equal(l.rankLoad(1n, 0).activeDecodeBlocks, 4);
  assert.equal(l.overlapDepth(1n, 0, words([h, h + 1n, 5n]), 3), 2);
});

// Sequence hashes are chained (a block's hash covers its whole prefix), so membership of a
// hash stands for membership of its path: the depth is a set walk from the first block.
test('overlap depth is the contiguous prefix already active on the rank', () => {
  const { l } = loads();
  l.book('a', 1n, 0, input([1n, 2n, 3n]));
  assert.equal(l.overlapDepth(1n, 0, words([1n, 2n, 9n, 3n]), 4), 2);
  assert.equal(l.overlapDepth(1n, 0, words([9n, 1n, 2n]), 3), 0, 'counted from the first block');
  assert.equal(l.overlapDepth(2n, 0, words([1n]), 1), 0);
});

test('output blocks are never shared; decay weights the request\'s unshared blocks', () => {
  const { l } = loads();
  l.book('a', 1n, 0, input([1n, 2n]));
  l.book('b', 1n, 0, input([1n, 3n]));
  l.addOutputBlock('a');
  l.addOutputBlock('b');
  assert.equal(l.rankLoad(1n, 0).activeDecodeBlocks, 5);
  // a's unshared blocks: 2 and its output block -> 0.5 each; block 1 is shared with b
  l.addOutputBlock('a', 0.5);
  // 1 + (2, o1, o2 at 0.5) + b's 3 and output = 1 + 1.5 + 2 = 4.5 -> rounds to 5 (JS rounds .5 up)
  assert.equal(l.rankLoad(1n, 0).activeDecodeBlocks, 5);
  l.addOutputBlock('a', 0);
  assert.equal(l.rankLoad(1n, 0).activeDecodeBlocks, 3, 'decay 0: only shared and other requests\' blocks weigh');
  l.free('a');
  assert.equal(l.rankLoad(1n, 0).activeDecodeBlocks, 3, 'weights leave with their blocks');
  assert.equal(l.addOutputBlock('a'), false);
});

test('expiry frees bookings older than the limit since admission; output progress does not refresh it', () => {
  const { l, clock } = loads({ expirySecs: 300 });
  l.book('old', 1n, 0, input([1n], 4));
  clock.advanceSecs(100);
  l.book('young', 1n, 0, input([2n], 4));
  clock.advanceSecs(150);
  l.addOutputBlock('old');
  assert.deepEqual(l.expire(), []);
  clock.advanceSecs(51);
  assert.deepEqual(l.expire(), ['old']);
  assert.deepEqual(l.rankLoad(1n, 0), { activePrefillTokens: 4, activeDecodeBlocks: 1, activeRequests: 1 });
});

test('removing a rank drops its bookings and returns their ids', () => {
  const { l } = loads();
  l.book('a', 1n, 0, input([1n]));
  l.book('b', 2n, 0, input([1n]));
  assert.deepEqual(l.removeRank(1n, 0), ['a']);
  assert.equal(l.has('a'), false);
  assert.equal(l.book('c', 1n, 0, input([1n])), false);
  assert.deepEqual(l.ranks(), [{ workerId: 2n, dpRank: 0 }]);
});

test('U64Counts agrees with a Map<bigint> model over 200,000 random operations (growth and backward-shift deletes)', () => {
  const rng = seededRng(42);
  const t = new U64Counts(4);
  const model = new Map<bigint, number>();
  const pool = Array.from({ length: 3000 }, (_, i) => (i % 7 === 0 ? BigInt(i) : rng.u64()));
  for (let i = 0; i < 200_000; i++) {
    const k = pool[Math.floor(rng.next() * pool.length)];
    const lo = Number(k & 0xffffffffn), hi = Number(k >> 32n);
    if (rng.next() < 0.55) {
      model.set(k, (model.get(k) ?? 0) + 1);
      assert.equal(t.inc(lo, hi), model.get(k));
    } else {
      const c = model.get(k) ?? 0;
      if (c <= 1) model.delete(k); else model.set(k, c - 1);
      assert.equal(t.dec(lo, hi), Math.max(0, c - 1));
    }
  }
  assert.equal(t.size, model.size);
  for (const k of pool) assert.equal(t.count(Number(k & 0xffffffffn), Number(k >> 32n)), model.get(k) ?? 0);
});

test('issue 29: a snapshot has the prompt (not the output blocks), prefill state and admission; a booking may keep an older admission', () => {
  const { l, clock } = loads({ expirySecs: 300 });
  clock.advance(1000);
  assert.ok(l.book('r', 1n, 0, input([1n, 2n], 8)));
  l.addOutputBlock('r');
  const s = l.snapshot('r')!;
  assert.deepEqual([Array.from(s.seq), s.prefillTokens, s.prefillDone, s.admittedAt], [[1, 0, 2, 0], 8, false, 1000]);
  assert.equal(l.prefillPending('r'), true);
  l.prefillComplete('r');
  assert.deepEqual([l.prefillPending('r'), l.snapshot('r')!.prefillDone, l.prefillPending('nope'), l.snapshot('nope')], [false, true, false, undefined]);
  // repaired from a peer 250 s after its admission there: it expires with the original
  assert.ok(l.book('old', 2n, 0, { ...input([3n]), admittedAt: clock.now() - 250_000 }));
  clock.advance(60_000);
  assert.deepEqual(l.expire(), ['old']);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRng, systemRng } from '../../../src/core/random.js';

test('seededRng is deterministic per seed, distinct across seeds, and uniform enough', () => {
  const a = seededRng(42), b = seededRng(42), c = seededRng(43), big = seededRng(1n << 63n);
  const xs = Array.from({ length: 100_000 }, () => a.next());
  assert.deepEqual(Array.from({ length: 100_000 }, () => b.next()), xs);
  assert.notEqual(c.next(), xs[0]);
  assert.notEqual(big.next(), seededRng(0).next(), 'the high seed bits matter');
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  const bins = new Array(10).fill(0);
  for (const x of xs) bins[Math.floor(x * 10)]++;
  for (const n of bins) assert.ok(Math.abs(n - 10_000) < 500, `bin count ${n}`);
  const words = new Set(Array.from({ length: 10_000 }, () => a.u64()));
  assert.equal(words.size, 10_000);
  assert.ok([...words].some((w) => w >= 1n << 63n), 'u64 spans the top bit');
});

test('systemRng gives independent streams', () => {
  assert.notEqual(systemRng().u64(), systemRng().u64());
});

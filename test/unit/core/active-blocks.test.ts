/**
 * The per-partition active-block table of load accounting (src/core/load/active-blocks.ts) and
 * the (words, tag) table under the approximate recorder (src/core/index/word-table.ts), against
 * Map models over random operations: refcounts, distinct blocks per row, holders of a hash and
 * the live bookings holding it, the active-prefix depth, through growth and backward-shift deletes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActiveBlocks } from '../../../src/core/load/active-blocks.js';
import { WordTable } from '../../../src/core/index/word-table.js';
import { seededRng } from '../../../src/core/random.js';

const words = (k: bigint): [number, number] => [Number(k & 0xffffffffn), Number(k >> 32n)];

test('ActiveBlocks agrees with a per-row Map model over 100,000 random operations', () => {
  const rng = seededRng(7);
  const ROWS = 6;
  const t = new ActiveBlocks();
  t.ensureRows(ROWS);
  const model = Array.from({ length: ROWS }, () => new Map<bigint, number>());
  const pool = Array.from({ length: 400 }, (_, i) => (i % 5 === 0 ? BigInt(i) : rng.u64()));
  for (let i = 0; i < 100_000; i++) {
    const k = pool[Math.floor(rng.next() * pool.length)], row = Math.floor(rng.next() * ROWS);
    const [lo, hi] = words(k);
    const m = model[row];
    if (rng.next() < 0.55) {
      m.set(k, (m.get(k) ?? 0) + 1);
      assert.equal(t.inc(lo, hi, row), m.get(k));
    } else {
      const c = m.get(k) ?? 0;
      if (c <= 1) m.delete(k); else m.set(k, c - 1);
      assert.equal(t.dec(lo, hi, row), Math.max(0, c - 1));
    }
  }
  let pairs = 0;
  for (let r = 0; r < ROWS; r++) {
    pairs += model[r].size;
    assert.equal(t.sizeOf(r), model[r].size);
    assert.equal(t.weightedSize(r), model[r].size);
  }
  assert.equal(t.pairs, pairs);
  for (const k of pool) {
    const [lo, hi] = words(k);
    assert.equal(t.holderCount(lo, hi), model.filter((m) => m.has(k)).length);
    assert.equal(t.liveCount(lo, hi), model.reduce((sum, m) => sum + (m.get(k) ?? 0), 0));
    for (let r = 0; r < ROWS; r++) assert.equal(t.count(lo, hi, r), model[r].get(k) ?? 0);
  }
  // depths of a prompt: only rows holding its first hash, each its contiguous held prefix
  const seqKeys = pool.slice(0, 12);
  const seq = new Uint32Array(seqKeys.flatMap((k) => words(k)));
  const depth = new Int32Array(ROWS), rows = new Int32Array(ROWS);
  const n = t.depths(seq, seqKeys.length, depth, rows);
  for (let r = 0; r < ROWS; r++) {
    let d = 0;
    while (d < seqKeys.length && model[r].has(seqKeys[d])) d++;
    assert.equal(t.depthOn(r, seq, seqKeys.length), d);
    assert.equal(Array.from(rows.subarray(0, n)).includes(r), d > 0);
    if (d > 0) assert.equal(depth[r], d);
  }
});

test('WordTable agrees with a Map model over 100,000 random adds and removes (stable ids, reuse)', () => {
  const rng = seededRng(9);
  const t = new WordTable();
  const model = new Map<string, number>();
  const pool = Array.from({ length: 2000 }, () => rng.u64());
  for (let i = 0; i < 100_000; i++) {
    const k = pool[Math.floor(rng.next() * pool.length)], tag = Math.floor(rng.next() * 3);
    const [lo, hi] = words(k);
    const key = `${k}:${tag}`;
    if (rng.next() < 0.6) {
      const e = t.findOrAdd(lo, hi, tag);
      assert.equal(t.added, !model.has(key));
      if (model.has(key)) assert.equal(e, model.get(key));
      model.set(key, e);
      assert.deepEqual([t.lo[e], t.hi[e], t.tag[e]], [lo, hi, tag]);
    } else {
      const e = t.find(lo, hi, tag);
      assert.equal(e, model.get(key) ?? -1);
      if (e >= 0) { t.remove(e); model.delete(key); }
    }
  }
  assert.equal(t.size, model.size);
  for (const [key, e] of model) {
    const [k, tag] = key.split(':');
    const [lo, hi] = words(BigInt(k));
    assert.equal(t.find(lo, hi, Number(tag)), e);
  }
});

/**
 * The pending-selection cache (Dynamo `lib/kv-router/src/services/selection/pending.rs`), in virtual time: our versions of Dynamo's `pending.rs`
 * tests plus key separation and the UTF-8 size formula.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PendingSelectionCache, entryBytes, type PendingSelection } from '../../../src/core/booking/pending.js';

class ManualClock { t = 0; now(): number { return this.t; } }

function sel(workerId = 1n, hashes = 1, over: Partial<PendingSelection> = {}): PendingSelection {
  return {
    workerId, dpRank: 0, sequenceHashes: new BigUint64Array(hashes).fill(7n), blockHashes: null,
    islTokens: 4 * hashes, effectivePrefillTokens: 4 * hashes, trackPrefillTokens: true, ...over,
  };
}

function cache(over: { ttlSecs?: number; maxEntries?: number; maxBytes?: number } = {}) {
  const clock = new ManualClock();
  const c = new PendingSelectionCache({ clock, ttlSecs: 120, maxEntries: 4096, maxBytes: 268435456, ...over });
  return { clock, c };
}

test('peek leaves the entry; a generation-guarded remove consumes it once', () => {
  const { c } = cache();
  const g = c.insert('m', 'g', 'id', sel(5n));
  const hit = c.peek('m', 'g', 'id');
  assert.ok(hit);
  assert.equal(hit.value.workerId, 5n);
  assert.equal(hit.generation, g);
  assert.ok(c.peek('m', 'g', 'id'), 'peek does not consume');
  assert.equal(c.removeIfGeneration('m', 'g', 'id', g), true);
  assert.equal(c.peek('m', 'g', 'id'), undefined);
  assert.equal(c.removeIfGeneration('m', 'g', 'id', g), false, 'second removal misses');
  assert.equal(c.size(), 0);
  assert.equal(c.bytes(), 0);
});

test('TTL: age == ttl is live, age > ttl is gone', () => {
  const { clock, c } = cache({ ttlSecs: 120 });
  clock.t = 1000;
  c.insert('m', 'g', 'id', sel());
  clock.t = 1000 + 120_000;
  assert.ok(c.peek('m', 'g', 'id'), 'exactly at the boundary');
  clock.t += 1;
  assert.equal(c.peek('m', 'g', 'id'), undefined);
  assert.equal(c.size(), 0, 'the expired entry was dropped by the peek');
});

test('every insert sweeps expired entries oldest-first', () => {
  const { clock, c } = cache({ ttlSecs: 10 });
  c.insert('m', 'g', 'a', sel());
  clock.t = 5_000;
  c.insert('m', 'g', 'b', sel());
  clock.t = 10_001;
  c.insert('m', 'g', 'c', sel());
  assert.equal(c.size(), 2, 'a expired, b still live');
  assert.equal(c.peek('m', 'g', 'a'), undefined);
  assert.ok(c.peek('m', 'g', 'b'));
  clock.t = 15_001;
  c.insert('m', 'g', 'd', sel());
  assert.equal(c.size(), 2);
  assert.deepEqual(['b', 'c', 'd'].map((id) => c.peek('m', 'g', id) !== undefined), [false, true, true]);
});

test('count cap evicts oldest first', () => {
  const { c } = cache({ maxEntries: 3 });
  for (const id of ['a', 'b', 'c', 'd', 'e']) c.insert('m', 'g', id, sel());
  assert.equal(c.size(), 3);
  assert.deepEqual(['a', 'b', 'c', 'd', 'e'].map((id) => c.peek('m', 'g', id) !== undefined), [false, false, true, true, true]);
});

test('byte budget evicts oldest first', () => {
  const one = entryBytes('m', 'g', 'a', sel(1n, 4)); // 32 + 3
  assert.equal(one, 35);
  const { c } = cache({ maxBytes: 3 * one });
  for (const id of ['a', 'b', 'c']) c.insert('m', 'g', id, sel(1n, 4));
  assert.equal(c.bytes(), 3 * one);
  assert.equal(c.size(), 3, 'exactly at the budget is kept');
  c.insert('m', 'g', 'd', sel(1n, 8)); // 67 bytes: a and b must go
  assert.deepEqual(['a', 'b', 'c', 'd'].map((id) => c.peek('m', 'g', id) !== undefined), [false, false, true, true]);
  assert.equal(c.bytes(), one + 67);
});

test('an entry bigger than the budget evicts itself and keeps the others', () => {
  const { c } = cache({ maxBytes: 100 });
  c.insert('m', 'g', 'a', sel(1n, 2));
  c.insert('m', 'g', 'big', sel(1n, 2));
  const g = c.insert('m', 'g', 'big', sel(2n, 20));
  assert.equal(typeof g, 'number');
  assert.equal(c.peek('m', 'g', 'big'), undefined, 'not kept, and the superseded entry of its key is gone too');
  assert.ok(c.peek('m', 'g', 'a'), 'others are not flushed for it');
  assert.equal(c.size(), 1);
  assert.equal(c.bytes(), entryBytes('m', 'g', 'a', sel(1n, 2)));
});

test('a newer insert survives the removal of the older generation', () => {
  const { c } = cache();
  const g1 = c.insert('m', 'g', 'id', sel(1n));
  const g2 = c.insert('m', 'g', 'id', sel(2n));
  assert.notEqual(g1, g2);
  assert.equal(c.size(), 1, 'latest wins');
  assert.equal(c.removeIfGeneration('m', 'g', 'id', g1), false);
  const hit = c.peek('m', 'g', 'id');
  assert.ok(hit);
  assert.equal(hit.value.workerId, 2n);
  assert.equal(hit.generation, g2);
  assert.equal(c.removeIfGeneration('m', 'g', 'id', g2), true);
});

test('a re-insert moves the key to the newest position (and restarts its TTL)', () => {
  const { clock, c } = cache({ maxEntries: 2, ttlSecs: 10 });
  c.insert('m', 'g', 'a', sel());
  c.insert('m', 'g', 'b', sel());
  clock.t = 6_000;
  c.insert('m', 'g', 'a', sel(9n));
  c.insert('m', 'g', 'c', sel());
  assert.equal(c.peek('m', 'g', 'b'), undefined, 'b is now the oldest');
  assert.equal(c.peek('m', 'g', 'a')?.value.workerId, 9n);
  clock.t = 15_000;
  assert.ok(c.peek('m', 'g', 'a'), 'TTL counts from the re-insert');
});

test('keys do not collide across separators and model/group combinations', () => {
  const { c } = cache();
  const keys: [string, string, string][] = [
    ['a:b', 'c', 'd'], ['a', 'b:c', 'd'], ['a', 'b', 'c:d'], ['a:b:c', '', 'd'], ['', 'a:b:c', 'd'], ['', '', 'a:b:c:d'],
    ['1:a', 'b', 'c'], ['1', ':ab', 'c'], ['m', 'g', 'x'], ['g', 'm', 'x'],
  ];
  keys.forEach(([m, g, id], i) => c.insert(m, g, id, sel(BigInt(i))));
  assert.equal(c.size(), keys.length);
  keys.forEach(([m, g, id], i) => assert.equal(c.peek(m, g, id)?.value.workerId, BigInt(i), `${m}|${g}|${id}`));
  assert.equal(c.discard('a', 'b', 'c:d'), true);
  assert.equal(c.discard('a', 'b', 'c:d'), false);
  assert.ok(c.peek('a', 'b:c', 'd'));
  assert.equal(c.peek('model', 'group', 'x'), undefined, 'wrong partition misses');
});

test('size formula counts both hash arrays and UTF-8 byte lengths', () => {
  const v = sel(1n, 3, { blockHashes: new BigUint64Array(2), loraName: 'lörä' }); // ö, ä: 2 bytes each
  // 8*2 + 8*3 + id "sé€😀" (1+2+3+4) + model "модель" (12) + group "g" (1) + lora (6)
  assert.equal(entryBytes('модель', 'g', 'sé€😀', v), 16 + 24 + 10 + 12 + 1 + 6);
  assert.equal(entryBytes('m', 'g', 'x', sel(1n, 0)), 3, 'no hashes, no lora');
  const enc = new TextEncoder();
  for (const s of ['ascii', 'é', '€', '😀', 'a\ud800b', '\udc00']) {
    assert.equal(entryBytes(s, '', '', sel(1n, 0)), enc.encode(s).length, JSON.stringify(s));
  }
  const { c } = cache();
  c.insert('модель', 'g', 'sé€😀', v);
  assert.equal(c.bytes(), 69);
  c.insert('модель', 'g', 'sé€😀', sel(1n, 1));
  assert.equal(c.bytes(), 8 + 10 + 12 + 1, 'replacing updates the byte count');
});

test('hash arrays that view a larger buffer are copied; standalone ones are taken over', () => {
  const { c } = cache();
  const big = new BigUint64Array([1n, 2n, 3n, 4n]);
  const view = big.subarray(1, 3);
  const own = new BigUint64Array([5n]);
  c.insert('m', 'g', 'id', sel(1n, 0, { sequenceHashes: view, blockHashes: own }));
  big[1] = 99n;
  const hit = c.peek('m', 'g', 'id');
  assert.ok(hit);
  assert.deepEqual([...hit.value.sequenceHashes], [2n, 3n]);
  assert.equal(hit.value.blockHashes, own);
});

test('options are validated', () => {
  const clock = new ManualClock();
  assert.throws(() => new PendingSelectionCache({ clock, ttlSecs: -1, maxEntries: 1, maxBytes: 1 }), RangeError);
  assert.throws(() => new PendingSelectionCache({ clock, ttlSecs: 1, maxEntries: 1.5, maxBytes: 1 }), RangeError);
  assert.throws(() => new PendingSelectionCache({ clock, ttlSecs: 1, maxEntries: 1, maxBytes: Number.NaN }), RangeError);
  const c = new PendingSelectionCache({ clock, ttlSecs: 0, maxEntries: 0, maxBytes: 0 });
  c.insert('m', 'g', 'id', sel());
  assert.equal(c.size(), 0, 'a zero count cap keeps nothing');
});

test('a prompt\'s block and sequence hashes, the two halves of one buffer, are taken over together', () => {
  const { c } = cache();
  const both = new BigUint64Array([1n, 2n, 3n, 4n]);
  const blocks = both.subarray(0, 2), seq = both.subarray(2);
  c.insert('m', 'g', 'id', sel(1n, 0, { sequenceHashes: seq, blockHashes: blocks }));
  const hit = c.peek('m', 'g', 'id');
  assert.ok(hit);
  assert.equal(hit.value.sequenceHashes, seq);
  assert.equal(hit.value.blockHashes, blocks);
  // halves in the other order, or a pair that leaves part of the buffer out, are copied
  c.insert('m', 'g', 'id2', sel(1n, 0, { sequenceHashes: both.subarray(0, 2), blockHashes: both.subarray(2) }));
  assert.notEqual(c.peek('m', 'g', 'id2')?.value.sequenceHashes, undefined);
  assert.notEqual(c.peek('m', 'g', 'id2')?.value.blockHashes?.buffer, both.buffer);
  c.insert('m', 'g', 'id3', sel(1n, 0, { sequenceHashes: both.subarray(1, 2), blockHashes: both.subarray(0, 1) }));
  assert.notEqual(c.peek('m', 'g', 'id3')?.value.sequenceHashes.buffer, both.buffer);
  assert.deepEqual([...(c.peek('m', 'g', 'id3')?.value.sequenceHashes ?? [])], [2n]);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headLines, parseTrace, sessionOf } from '../../../src/sim/trace.js';
import { BlockIds } from '../../../src/sim/block-ids.js';
import { conversationTrace, jsonl } from './sim-helpers.js';

test('parses the conversation trace into flat arrays', () => {
  const t = conversationTrace();
  assert.equal(t.length, 12031);
  assert.equal(t.offsets[t.length], 288500);
  assert.equal(t.hashIds[0], 0);
  for (let i = 1; i < t.length; i++) assert.ok(t.timestamps[i] >= t.timestamps[i - 1]);
});

test('sorts by timestamp, skips blank lines, honours a limit', () => {
  const text = jsonl([[20, 512, 3, [0, 1]], [10, 100, 2, [0]]]) + '\n\n';
  const t = parseTrace(text);
  assert.deepEqual([...t.timestamps], [10, 20]);
  assert.deepEqual([...t.hashIds], [0, 0, 1]);
  assert.deepEqual([...t.offsets], [0, 1, 3]);
  assert.equal(parseTrace(text, { limit: 1 }).length, 1);
});

test('a malformed line is an error naming its line', () => {
  assert.throws(() => parseTrace('{"timestamp": 1}\n'), /trace line 1: needs timestamp/);
  assert.throws(() => parseTrace(jsonl([[0, 10, 1, [0]]]) + 'nope\n'), /trace line 2: not JSON/);
  assert.throws(() => parseTrace(jsonl([[0, 1025, 1, [0, 1]]])), /exceeds 2 hash_ids/);
});

test('the session of a request is its second hash_id', () => {
  const t = parseTrace(jsonl([[0, 600, 1, [0, 7, 9]], [1, 100, 1, [0]]]));
  assert.equal(sessionOf(t, 0), 's7');
  assert.equal(sessionOf(t, 1), undefined);
});

test('headLines keeps the first n lines', () => {
  assert.equal(headLines('a\nb\nc\n', 2), 'a\nb\n');
  assert.equal(headLines('a\nb', 5), 'a\nb');
});

test('block ids: ceil(isl / bs) keys per request, distinct hashes per identity', () => {
  const t = parseTrace(jsonl([[0, 600, 1, [0, 7]], [1, 512, 1, [0]]]));
  const ids = new BlockIds(t, 128);
  assert.equal(ids.per, 4);
  assert.deepEqual(ids.keys(0, []), [0, 1, 2, 3, 28]);
  assert.deepEqual(ids.keys(1, []), [0, 1, 2, 3]);
  const all = new Set<bigint>();
  for (let k = 0; k < 1000; k++) for (const h of [ids.local(k), ids.ext(k), ids.seq(k)]) all.add(h);
  assert.equal(all.size, 3000);
  assert.equal(ids.local(5), ids.local(5));
  assert.throws(() => new BlockIds(t, 100), /must divide 512/);
});

test('an offset drops the first requests and starts the rest at time 0', () => {
  const text = jsonl([[10, 100, 1, [0]], [20, 100, 1, [0]], [35, 100, 1, [0]], [50, 100, 1, [0]]]);
  const t = parseTrace(text, { offset: 1, limit: 2 });
  assert.deepEqual([...t.timestamps], [0, 15]);
  assert.equal(parseTrace(text, { offset: 3 }).length, 1);
});

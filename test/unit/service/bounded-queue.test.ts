import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundedQueue } from '../../../src/service/bounded-queue.js';

test('FIFO order across wrap-around and growth; a full queue refuses the newest', () => {
  const q = new BoundedQueue<number>(3000);
  const model: number[] = [];
  let next = 0;
  for (let round = 0; round < 50; round++) {
    const pushes = (round * 37) % 200;
    for (let i = 0; i < pushes; i++) { assert.equal(q.push(next), model.length < 3000); if (model.length < 3000) model.push(next); next++; }
    const shifts = (round * 53) % 180;
    for (let i = 0; i < shifts; i++) assert.equal(q.shift(), model.shift());
    assert.equal(q.length, model.length);
  }
  const full = new BoundedQueue<string>(2);
  assert.ok(full.push('a'));
  assert.ok(full.push('b'));
  assert.equal(full.push('c'), false);
  assert.equal(full.shift(), 'a');
  assert.ok(full.push('c'));
  assert.deepEqual([full.shift(), full.shift(), full.shift()], ['b', 'c', undefined]);
});

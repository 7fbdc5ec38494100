import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimEngine, type EngineHooks, type KvEventSink, type SimRequest } from '../../../src/sim/engine.js';
import { EventQueue, VirtualClock } from '../../../src/sim/event-queue.js';

function request(index: number, isl: number, osl: number, keys: number[], arrival: number): SimRequest {
  return { index, id: `r${index}`, isl, osl, keys, arrival, routed: arrival, prefillStart: 0, prefillEnd: 0, end: 0, cachedBlocks: 0, cachedTokens: 0, outputBlocks: 0 };
}

test('engine timeline: serial prefill, cache hit at prefill start, output blocks, admission limit', () => {
  const clock = new VirtualClock();
  const q = new EventQueue(clock);
  const log: string[] = [];
  const sink: KvEventSink = {
    stored: (w, r, parent, keys) => log.push(`${clock.t} stored ${w}/${r} parent=${parent} [${keys}]`),
    removed: (w, r, keys) => log.push(`${clock.t} removed [${keys}]`),
  };
  const hooks: EngineHooks = {
    prefillComplete: (r) => log.push(`${clock.t} prefill_complete ${r.id}`),
    outputBlock: (r) => log.push(`${clock.t} output_block ${r.id}`),
    finished: (r) => log.push(`${clock.t} free ${r.id}`),
  };
  const e = new SimEngine(3n, 1, { blockSize: 4, capacityBlocks: 100, prefillTokensPerSec: 1000, decodeTokensPerSec: 100, maxConcurrent: 1 }, q, sink, hooks);
  const a = request(0, 10, 5, [1, 2, 3], 0);
  const b = request(1, 8, 1, [1, 2], 5);
  e.arrive(a);
  q.at(5, () => { e.arrive(b); assert.equal(e.activeRequests, 2); assert.equal(e.activeTokens, 18); });
  while (q.runNext());
  assert.deepEqual(log, [
    '10 stored 3/1 parent=null [1,2,3]', '10 prefill_complete r0',
    '30 output_block r0', // token 3 is the 11th token: a third block
    '50 free r0',
    '50 prefill_complete r1', // 2 blocks cached (8 tokens): no prefill work
    '50 output_block r1', '50 free r1',
  ]);
  assert.deepEqual([a.prefillStart, a.prefillEnd, a.end, a.cachedTokens, a.outputBlocks], [0, 10, 50, 0, 1]);
  assert.deepEqual([b.prefillStart, b.prefillEnd, b.end, b.cachedBlocks, b.cachedTokens, b.outputBlocks], [50, 50, 50, 2, 8, 1]);
  assert.equal(e.activeRequests, 0);
  assert.equal(e.activeTokens, 0);
});

test('eviction is announced as Removed, leaf first', () => {
  const clock = new VirtualClock();
  const q = new EventQueue(clock);
  const removed: number[][] = [];
  const sink: KvEventSink = { stored: () => {}, removed: (_w, _r, keys) => removed.push([...keys]) };
  const noop = (): void => {};
  const e = new SimEngine(1n, 0, { blockSize: 4, capacityBlocks: 4, prefillTokensPerSec: 1e6, decodeTokensPerSec: 1e6, maxConcurrent: 8 }, q, sink,
    { prefillComplete: noop, outputBlock: noop, finished: noop });
  e.arrive(request(0, 12, 1, [1, 2, 3], 0));
  while (q.runNext());
  e.arrive(request(1, 12, 1, [1, 7, 8], clock.t));
  while (q.runNext());
  assert.deepEqual(removed, [[3], [2]]); // room for blocks 7 and 8, then for an output block
  assert.equal(e.cache.evicted, 2);
});

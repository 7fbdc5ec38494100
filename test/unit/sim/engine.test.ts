import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimEngine, newRequest, type EngineHooks, type EngineParams, type KvEventSink } from '../../../src/sim/engine.js';
import { EventQueue, VirtualClock } from '../../../src/sim/event-queue.js';
import { KvCache } from '../../../src/sim/kv-cache.js';
import { stepMs } from '../../../src/sim/perf-model.js';

/** 10 ms a step plus 1 ms a prefill token; decodes cost only the fixed part. */
const COST = { fixedMs: 10, prefillTokenMs: 1, prefillPairMs: 0, decodeSeqMs: 0, decodeKvTokenMs: 0 };

function rig(p: Partial<EngineParams> = {}) {
  const clock = new VirtualClock();
  const q = new EventQueue(clock);
  const log: string[] = [];
  /** What an index would hold for this rank, to check every event applies. */
  const held = new Set<number>();
  const problems: string[] = [];
  const sink: KvEventSink = {
    stored: (w, r, parent, keys) => {
      log.push(`${clock.t} stored ${w}/${r} parent=${parent} [${keys}]`);
      if (parent !== null && !held.has(parent)) problems.push(`stored under unknown parent ${parent}`);
      for (const k of keys) { if (held.has(k)) problems.push(`stored twice ${k}`); held.add(k); }
    },
    removed: (_w, _r, keys) => {
      log.push(`${clock.t} removed [${keys}]`);
      for (const k of keys) if (!held.delete(k)) problems.push(`removed unknown ${k}`);
    },
  };
  const hooks: EngineHooks = {
    prefillComplete: (r) => log.push(`${clock.t} prefill_complete ${r.id}`),
    outputBlock: (r) => log.push(`${clock.t} output_block ${r.id}`),
    finished: (r) => log.push(`${clock.t} free ${r.id}`),
  };
  const params: EngineParams = { blockSize: 4, capacityBlocks: 100, maxConcurrent: 8, maxBatchedTokens: 8, cost: COST, ...p };
  const e = new SimEngine(3n, 1, params, q, sink, hooks);
  const run = (): void => { while (q.runNext()); };
  return { clock, q, log, e, run, held, problems };
}

test('steps: chunked prefill within the token budget, a prefix hit in the same step, decode, output blocks', () => {
  const { q, log, e, run, problems } = rig();
  const a = newRequest(0, 10, 3, [1, 2, 3], 0);
  const b = newRequest(1, 8, 1, [1, 2], 5);
  e.arrive(a);
  q.at(5, () => e.arrive(b));
  run();
  assert.deepEqual(log, [
    // step 1 (0-18): A's first 8 tokens (2 blocks)
    '18 stored 3/1 parent=null [1,2]',
    // step 2 (18-31): A's last 2 tokens (a third block), then B: 2 blocks hit, its last token computed
    '31 stored 3/1 parent=2 [3]',
    '31 prefill_complete r0',
    '31 prefill_complete r1', '31 output_block r1', '31 free r1', // B's token 1 sits at position 8: a new block
    // steps 3 and 4 (10 ms each): A's tokens 2 and 3; token 3 (position 12) opens a block, and A ends
    '51 output_block r0', '51 free r0',
  ]);
  assert.deepEqual([a.prefillStart, a.prefillEnd, a.end, a.cachedBlocks, a.cachedTokens, a.outputBlocks], [0, 31, 51, 0, 0, 1]);
  assert.deepEqual([b.prefillStart, b.prefillEnd, b.end, b.cachedBlocks, b.cachedTokens], [18, 31, 31, 2, 7]);
  assert.deepEqual(e.counters, { steps: 4, prefillTokens: 11, recomputedTokens: 0, decodeTokens: 4, preemptions: 0, busyMs: 51 });
  assert.equal(e.activeRequests, 0);
  assert.equal(e.activeTokens, 0);
  assert.deepEqual(problems, []);
});

test('allocation evicts the least recently released cached blocks, leaf first', () => {
  const { e, run, log, clock } = rig({ capacityBlocks: 4, maxBatchedTokens: 100 });
  e.arrive(newRequest(0, 12, 1, [1, 2, 3], 0));
  run();
  e.arrive(newRequest(1, 12, 1, [1, 7, 8], clock.t));
  run();
  assert.deepEqual(log.filter((l) => / (stored|removed) /.test(l)).map((l) => l.replace(/^\d+ /, '')), [
    'stored 3/1 parent=null [1,2,3]', 'removed [3]', 'stored 3/1 parent=1 [7,8]',
  ]);
  assert.equal(e.cache.evicted, 1);
  assert.equal(e.cache.used, 4); // 2, 1, 7, 8 cached
  assert.equal(e.cache.held, 0);
});

test('out of blocks: the newest running request is preempted, recomputes, and everything still finishes', () => {
  // two requests of 2 prompt blocks growing to 5 blocks each; 7 blocks do not hold both
  const { e, run, log, problems } = rig({ capacityBlocks: 7, maxBatchedTokens: 64 });
  const a = newRequest(0, 8, 12, [1, 2], 0);
  const b = newRequest(1, 8, 12, [3, 4], 0);
  e.arrive(a);
  e.arrive(b);
  run();
  assert.ok(e.counters.preemptions > 0);
  assert.ok(e.counters.recomputedTokens > 0);
  assert.equal(e.counters.decodeTokens, 24);
  assert.deepEqual(log.filter((l) => / free /.test(l)).length, 2);
  assert.equal(a.generated + b.generated, 24);
  assert.ok(a.preemptions + b.preemptions === e.counters.preemptions);
  assert.deepEqual(problems, [], 'KV events stay consistent through preemption');
  assert.equal(e.cache.held, 0);
});

test('generated blocks are stored once full and stay cached after the request ends', () => {
  const { e, run, log, problems } = rig({ maxBatchedTokens: 100 });
  const r = newRequest(0, 4, 10, [1], 0);
  e.arrive(r);
  run();
  const stored = log.filter((l) => / stored /.test(l)).map((l) => l.replace(/^\d+ stored 3\/1 /, ''));
  // prompt block 1; tokens 1-4 fill the second block, 5-8 the third; token 9-10 leave a partial one
  assert.equal(stored.length, 3);
  assert.equal(stored[0], 'parent=null [1]');
  assert.match(stored[1], /^parent=1 \[\d+\]$/);
  assert.equal(e.cache.used, 3, 'full blocks stay cached; the partial one is freed');
  assert.equal(r.outputBlocks, 3);
  assert.deepEqual(problems, []);
});

test('decode-only stretches as one event give the same timeline as stepping one by one', () => {
  const cost = { fixedMs: 3, prefillTokenMs: 0.01, prefillPairMs: 1e-6, decodeSeqMs: 0.1, decodeKvTokenMs: 0.001 };
  const runOnce = (fast: boolean): string[] => {
    const { e, run, log, q } = rig({ blockSize: 16, maxBatchedTokens: 256, capacityBlocks: 60, cost });
    e.fastPath = fast;
    for (let i = 0; i < 12; i++) {
      const keys = Array.from({ length: 4 + (i % 5) }, (_, b) => (i % 3) * 100 + b);
      q.at(i * 37.5, () => e.arrive(newRequest(i, keys.length * 16 - (i % 7), 20 + 9 * i, keys, i * 37.5)));
    }
    run();
    return [...log, JSON.stringify(e.counters)];
  };
  assert.deepEqual(runOnce(true), runOnce(false));
});

test('KV cache: sharing, LRU order, unhashed blocks freed on release', () => {
  const c = new KvCache(3);
  const ev: number[] = [];
  assert.equal(c.hold(1, true, ev), true);
  assert.equal(c.hold(1, true, ev), false);
  c.hold(2, true, ev);
  c.hold(9, false, ev);
  assert.equal(c.has(9), false, 'an unhashed block is not a hit');
  assert.equal(c.available, 0);
  c.release(9);
  assert.equal(c.used, 2, 'an unhashed block is freed, not cached');
  c.release(2); c.release(1); c.release(1);
  assert.equal(c.matchPrefix([1, 2, 5]), 2);
  assert.equal(c.available, 3);
  c.hold(5, true, ev); c.hold(6, true, ev);
  assert.deepEqual(ev, [2], 'the least recently released block goes first');
  assert.equal(stepMs(COST, 8, 0, 2, 100), 18);
});

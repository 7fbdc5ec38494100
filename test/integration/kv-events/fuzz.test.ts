/**
 * Bad traffic at every listener (seeded, so a failure reproduces): random frame counts, short
 * seq frames, random bytes, random msgpack values, byte-flipped real batches. The service keeps
 * serving, every message is accounted for in exactly one counter, and a valid batch sent after
 * the noise is applied.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine } from '../../support/fake-engine.js';
import { batch, fixtureLines, pack, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { counters, kvService, rankOverlaps, until, workerBody } from '../../support/kv-service.js';
import { seqFrame } from '../../../src/service/kv-events/frames.js';
import { seededRng } from '../../../src/core/random.js';
import type { IngestCounters } from '../../../src/service/kv-events/stats.js';

const MESSAGES = 400;
const rng = seededRng(20261202);
const int = (n: number): number => Math.floor(rng.next() * n);
const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
const realBatches = fixtureLines('v026-array-batch.jsonl').map((l) => Buffer.from(l.payload_hex, 'hex'));

/** A random msgpack-able value, a few levels deep. */
function randomValue(depth = 0): unknown {
  switch (int(depth > 2 ? 6 : 9)) {
    case 0: return int(1 << 20) - (1 << 19);
    case 1: return rng.u64();
    case 2: return rng.next() * 1e6;
    case 3: return ['BlockStored', 'BlockRemoved', 'AllBlocksCleared', 'GPU', 'type', ''][int(6)];
    case 4: return int(2) === 0 ? null : true;
    case 5: return bytes(int(40));
    case 6: return Array.from({ length: int(6) }, () => randomValue(depth + 1));
    case 7: return Object.fromEntries(Array.from({ length: int(5) }, () => [['ts', 'events', 'type', 'block_hashes', 'token_ids', 'x'][int(6)], randomValue(depth + 1)]));
    default: return [rng.next(), Array.from({ length: int(4) }, () => randomValue(depth + 1)), int(3)];
  }
}

/**
 * One bad (or at least odd) message number `i`. Seqs mostly count up (so payloads get past the
 * watermark and reach the decoder), sometimes jump; they stay below 2^40.
 */
function noise(i: number): (Buffer | string)[] {
  const seq = () => seqFrame(int(20) === 0 ? BigInt(int(2 ** 20)) * BigInt(int(2 ** 20)) : BigInt(i));
  switch (int(5)) {
    case 0: return Array.from({ length: [1, 2, 4, 5][int(4)] }, () => bytes(int(12)));
    case 1: return ['kv-events', bytes([0, 1, 4, 7, 9][int(5)]), realBatches[0]];
    case 2: return ['kv-events', seq(), bytes(1 + int(200))];
    case 3: return ['', seq(), pack(randomValue())];
    default: {
      const b = Buffer.from(realBatches[int(realBatches.length)]);
      for (let k = 0; k < 1 + int(4); k++) b[int(b.length)] = int(256);
      return ['kv-events', seq(), b];
    }
  }
}

const accounted = (c: IngestCounters): number => c.droppedFrames.frameCount + c.droppedFrames.seqLength + c.droppedFrames.undecodable
  + c.droppedFrames.badShape + c.droppedFrames.unknownRank + c.staleBatches + c.batchesApplied + c.applyErrors;

test('random frames and msgpack at each listener are dropped and counted; the service keeps serving', async (t) => {
  const engines = [await FakeEngine.start(), await FakeEngine.start(), await FakeEngine.start()];
  const service = await kvService();
  t.after(async () => { await service.shutdown(); for (const e of engines) e.close(); });
  service.upsertWorker(workerBody(1, { data_parallel_size: 2, kv_events_endpoints: { 0: engines[0].endpoint, 1: engines[1].endpoint } }));
  service.upsertWorker(workerBody(2, { kv_events_endpoint: engines[2].endpoint }));
  await Promise.all(engines.map((e) => e.waitForSubscribers()));

  for (let i = 0; i < MESSAGES; i++) for (const e of engines) await e.sendRaw(noise(i));
  // An empty valid batch closes the noise; only then the real store (a noise batch of one rank
  // may name the other rank, so the store must not race the noise).
  const P = tokenRange(1000, 32);
  const last = 2n ** 50n;
  for (const e of engines) await e.publish(last - 1n, batch([]));
  await until(service, 1, (c) => accounted(c) === 2 * (MESSAGES + 1), 'worker 1 saw everything');
  await until(service, 2, (c) => accounted(c) === MESSAGES + 1, 'worker 2 saw everything');
  const before = [counters(service, 1).batchesApplied, counters(service, 2).batchesApplied];
  for (const [i, e] of engines.entries()) await e.publish(last, batch([storedEvent([900n + BigInt(i), 950n + BigInt(i)], null, P)], i === 1 ? 1 : 0));
  await until(service, 1, (c) => c.batchesApplied === before[0] + 2, 'worker 1 applied the store');
  await until(service, 2, (c) => c.batchesApplied === before[1] + 1, 'worker 2 applied the store');

  for (const id of [1, 2]) {
    const c = counters(service, id);
    assert.equal(c.applyErrors, 0);
    for (const [reason, n] of Object.entries(c.droppedFrames)) assert.ok(n > 0, `worker ${id}: some ${reason} drops`);
    assert.deepEqual(service.ingressStats(BigInt(id))?.ranks.map((r) => r.watermark), id === 1 ? [last, last] : [last]);
  }
  const rows = rankOverlaps(service, P);
  assert.deepEqual([rows['1:0'], rows['1:1'], rows['2:0']], [[2, 2], [2, 2], [2, 2]], 'the valid batch after the noise was applied');
  assert.equal((await service.select({ model_name: 'm', token_ids: P })).overlap.gpu, 32);
});

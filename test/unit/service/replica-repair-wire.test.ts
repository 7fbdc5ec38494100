/** The anti-entropy wire (replica-repair-wire.ts): every kind round-trips, u64s stay exact, anything out of bounds is refused. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Packr } from 'msgpackr';
import { REPAIR_MAX, REPAIR_TOPIC, decodeRepair, encodeRepair, type RepairMessage } from '../../../src/service/replica-repair-wire.js';
import { LIFECYCLE_TOPIC, AFFINITY_TOPIC } from '../../../src/service/replica-wire.js';

const P = { modelName: 'm', routingGroup: 'g', blockSize: 16 };
const BIG = 18446744073709551615n;

test('every kind round-trips, u64 values exact', () => {
  const msgs: RepairMessage[] = [
    { kind: 'digest', from: BIG, seq: 7, round: 3, final: true, sentLifecycle: 100, sentAffinity: 2, hears: [1n, BIG],
      groups: [{ ...P, owner: BIG, n: 2, buckets: [0, 3, 0xffffffff, 1, 1, 1, 2, 3] }] },
    { kind: 'want', from: 1n, seq: 0, to: BIG, req: 9, part: P, owner: 5n, n: 64, buckets: [0, 63] },
    { kind: 'list', from: 1n, seq: 1, to: 2n, req: 9, done: false, entries: [{ id: 'a', workerId: BIG, dpRank: 3, ageMs: 1500, prefillDone: true }] },
    { kind: 'fetch', from: 1n, seq: 2, to: 2n, req: 10, part: P, ids: ['a', 'b'] },
    { kind: 'bookings', from: 1n, seq: 3, to: 2n, req: 10, done: true, items: [{ id: 'a', workerId: 4n, dpRank: 0, owner: BIG, ageMs: 5,
      prefillTokens: 64, prefillDone: false, expectedOutputTokens: 9, loraName: 'lora', seq: new Uint32Array([1, 2, 0xffffffff, 4]) }] },
    { kind: 'free', from: 1n, seq: 4, ids: ['x'] },
  ];
  for (const m of msgs) assert.deepEqual(decodeRepair(encodeRepair(m)), m, m.kind);
});

test('the topic is no prefix of Dynamo\'s topics (their subscribers never receive it), nor they of it', () => {
  for (const t of [LIFECYCLE_TOPIC, AFFINITY_TOPIC]) assert.ok(!REPAIR_TOPIC.startsWith(t) && !t.startsWith(REPAIR_TOPIC));
});

test('malformed messages are refused: unknown kind, bad types, arrays or strings past their bound', () => {
  const packr = new Packr({ useRecords: false, variableMapSize: true });
  const bad = (v: unknown) => assert.throws(() => decodeRepair(packr.pack(v)), /anti-entropy message: bad/);
  bad({ k: 'nope', from: 1, seq: 0 });
  bad({ k: 'free', from: -1, seq: 0, ids: [] });
  bad({ k: 'free', from: 1, seq: 0.5, ids: [] });
  bad({ k: 'free', from: 1, seq: 0, ids: Array.from({ length: REPAIR_MAX.ids + 1 }, () => 'x') });
  bad({ k: 'free', from: 1, seq: 0, ids: ['x'.repeat(5000)] });
  bad({ k: 'want', from: 1, seq: 0, to: 2, req: 1, m: 'm', g: 'g', bs: 4, owner: 1, n: 4, b: [4] });
  bad({ k: 'digest', from: 1, seq: 0, round: 0, final: true, sl: 0, sa: 0, hears: [], groups: [{ m: 'm', g: 'g', bs: 4, owner: 1, n: 2, b: [2, 1, 1, 1] }] });
  bad({ k: 'bookings', from: 1, seq: 0, to: 2, req: 1, done: true, items: [{ id: 'a', w: 1, r: 0, owner: 1, age: 0, pt: 0, pd: true, seq: new Uint8Array(7) }] });
  assert.throws(() => decodeRepair(packr.pack([1, 2])), /bad envelope/);
});

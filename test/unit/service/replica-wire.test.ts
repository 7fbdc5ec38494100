/** Replica-sync wire format (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`): named-field msgpack, enum variants, legacy rejection. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Packr, Unpackr } from 'msgpackr';
import {
  decodeAffinityEvent, decodeReplicaEvent, encodeAffinityEvent, encodeReplicaEvent, type ReplicaEvent,
} from '../../../src/service/replica-wire.js';

const raw = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });
const packr = new Packr({ useRecords: false, variableMapSize: true });
const MAX = (1n << 64n) - 1n;

const add: ReplicaEvent = {
  routerId: 42n,
  event: {
    modelName: 'model', routingGroup: 'default', blockSize: 4, requestId: 'r-1', workerId: MAX, dpRank: 3, loraName: null,
    kind: 'add', seq: BigUint64Array.of(0n, 1n << 63n, MAX), trackPrefillTokens: true, expectedOutputTokens: 7, prefillTokens: 4,
  },
};

test('v1 lifecycle envelope: exactly four keys with routing_group, named fields, u64 exact', () => {
  const buf = encodeReplicaEvent(add);
  const v = raw.unpack(buf) as Record<string, any>;
  assert.deepEqual(Object.keys(v).sort(), ['block_size', 'event', 'model_name', 'routing_group']);
  assert.deepEqual(Object.keys(v.event).sort(), ['data', 'lora_name', 'request_id', 'router_id', 'worker']);
  assert.equal(v.event.worker.worker_id, MAX);
  assert.equal(v.event.lora_name, null);
  assert.deepEqual(Object.keys(v.event.data), ['AddRequest']);
  assert.deepEqual(v.event.data.AddRequest.prefill_load_hint, { initial_effective_prefill_tokens: 4, expected_prefill_duration: null });
  assert.deepEqual(decodeReplicaEvent(buf), add);
});

test('unit variants encode as strings and round-trip', () => {
  for (const kind of ['free', 'prefill_complete'] as const) {
    const { modelName, routingGroup, blockSize, requestId, workerId, dpRank } = add.event;
    const e: ReplicaEvent = { ...add, event: { modelName, routingGroup, blockSize, requestId, workerId, dpRank, kind, loraName: 'lora-a' } };
    const v = raw.unpack(encodeReplicaEvent(e)) as Record<string, any>;
    assert.equal(v.event.data, kind === 'free' ? 'Free' : 'MarkPrefillCompleted');
    assert.deepEqual(decodeReplicaEvent(encodeReplicaEvent(e)), e);
  }
});

test('track_prefill_tokens defaults to true when absent; nil token_sequence allowed', () => {
  const buf = packr.pack({ model_name: 'm', routing_group: 'g', block_size: 16, event: {
    request_id: 'x', worker: { worker_id: 1, dp_rank: 0 }, data: { AddRequest: { token_sequence: null } }, router_id: 9 } });
  const e = decodeReplicaEvent(buf);
  assert.equal(e.event.kind, 'add');
  assert.equal(e.event.kind === 'add' && e.event.trackPrefillTokens, true);
  assert.equal(e.event.kind === 'add' && e.event.seq, null);
});

test('a legacy tenant_id envelope and malformed payloads are rejected', () => {
  const legacy = packr.pack({ model_name: 'm', tenant_id: 'g', block_size: 16, event: {
    request_id: 'x', worker: { worker_id: 1, dp_rank: 0 }, data: 'Free', router_id: 9 } });
  assert.throws(() => decodeReplicaEvent(legacy), /legacy/);
  assert.throws(() => decodeReplicaEvent(Buffer.from([0xc1])));
  assert.throws(() => decodeReplicaEvent(packr.pack([1, 2, 3])));
  assert.throws(() => decodeReplicaEvent(packr.pack({ model_name: 'm', routing_group: 'g', block_size: 4, event: {
    request_id: 'x', worker: { worker_id: -1, dp_rank: 0 }, data: 'Free', router_id: 9 } })));
  assert.throws(() => decodeReplicaEvent(packr.pack({ model_name: 'm', routing_group: 'g', block_size: 4, event: {
    request_id: 'x', worker: { worker_id: 1, dp_rank: 0 }, data: 'Bogus', router_id: 9 } })), /unknown event data/);
});

test('affinity binding events round-trip with nil dp_rank', () => {
  const e = { modelName: 'm', routingGroup: 'g', sessionId: 's', workerId: MAX, dpRank: null, sequence: 1n << 62n, writerId: 5n };
  assert.deepEqual(decodeAffinityEvent(encodeAffinityEvent(e)), e);
  assert.throws(() => decodeAffinityEvent(packr.pack({ model_name: 'm' })));
});

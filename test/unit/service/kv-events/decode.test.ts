import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { Packr, unpack } from 'msgpackr';
import { createXXHash3 } from 'hash-wasm';
import { seededRng } from '../../../../src/core/random.js';
import {
  KvBatchDecoder, KvDecodeError, Tier, isMainAttentionKind, mmHashesOfBlock,
  type DecodedBatch, type DecodedEvent, type DecodedStored,
} from '../../../../src/service/kv-events/decode.js';

// Compiled to build/dist/test/unit/service/kv-events/: six levels up is the project root.
const FIXTURES = new URL('../../../../../../test/fixtures/vllm-kv-events/', import.meta.url);
const packr = new Packr({ useRecords: false, useBigInt64: true, largeBigIntToFloat: false } as never);
const pack = (v: unknown): Uint8Array => packr.pack(v);

// ---- helpers (BigInt only here, in the test) ----
const u64 = (lo: number, hi: number): bigint => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
const hashesOf = (b: DecodedBatch, start: number, count: number): bigint[] =>
  Array.from({ length: count }, (_, i) => u64(b.hashes[2 * (start + i)], b.hashes[2 * (start + i) + 1]));
const tokensOf = (b: DecodedBatch, e: DecodedStored): number[] => Array.from(b.tokens.subarray(e.tokenStart, e.tokenStart + e.tokenCount));
const parentOf = (e: DecodedStored): bigint | null => (e.hasParent ? u64(e.parentLo, e.parentHi) : null);
const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));
/** Fixture hash (`"123"`, 123 or `{$bytes}`) -> the u64 identity (bytes: last 8 big-endian). */
function fixtureHash(v: unknown): bigint {
  if (typeof v === 'string' || typeof v === 'number') return BigInt(v);
  const bytes = Buffer.from((v as { $bytes: string }).$bytes, 'hex');
  return BigInt.asUintN(64, BigInt('0x' + bytes.toString('hex')));
}
const TIER_OF: Record<string, number> = { GPU: Tier.Device, CPU: Tier.Host };
const stored = (e: DecodedEvent | undefined): DecodedStored => { assert.equal(e?.kind, 'stored'); return e as DecodedStored; };
const decoder = new KvBatchDecoder();

interface FixtureLine { seq: number; step: string; payload_hex: string; fields: { ts: number; data_parallel_rank?: number | null; events: Record<string, unknown>[] } }
const fixtureFiles = readdirSync(FIXTURES).filter((f) => f.endsWith('.jsonl')).sort();
const linesOf = (f: string): FixtureLine[] => readFileSync(new URL(f, FIXTURES), 'utf8').trim().split('\n').map((l) => JSON.parse(l));

test('fixture directory has the five captures', () => {
  assert.deepEqual(fixtureFiles, ['map-batch-bytes.jsonl', 'map-batch-int.jsonl', 'v026-array-batch-dp1.jsonl', 'v026-array-batch.jsonl', 'v09-positional.jsonl']);
});

for (const file of fixtureFiles) {
  test(`fixture ${file}: every batch matches its fields`, () => {
    for (const line of linesOf(file)) {
      const payload = hex(line.payload_hex);
      const b = decoder.decode(payload);
      const f = line.fields;
      const where = `${file} seq ${line.seq} (${line.step})`;
      assert.equal(b.ts, f.ts, where);
      assert.equal(b.dpRank, f.data_parallel_rank ?? null, where);
      assert.equal(b.dropped, 0, where);
      assert.equal(b.events.length, f.events.length, where);
      // Independent oracle for the tag: msgpackr's generic decode of the same bytes.
      const raw = unpack(payload) as unknown;
      const rawEvents = (Array.isArray(raw) ? raw[1] : (raw as { events: unknown[] }).events) as unknown[];
      const tags = rawEvents.map((e) => (Array.isArray(e) ? e[0] : (e as { type: string }).type));
      let hashTotal = 0, tokenTotal = 0;
      b.events.forEach((e, i) => {
        const fe = f.events[i];
        const w = `${where} event ${i}`;
        assert.equal(e.kind, { BlockStored: 'stored', BlockRemoved: 'removed', AllBlocksCleared: 'cleared' }[tags[i] as string], w);
        if (e.kind === 'cleared') { assert.deepEqual(fe, {}, w); return; }
        assert.equal(e.tier, fe.medium == null ? Tier.Device : TIER_OF[fe.medium as string], w);
        assert.equal(e.groupIdx, fe.group_idx ?? null, w);
        assert.equal(e.hashStart, hashTotal, w);
        assert.deepEqual(hashesOf(b, e.hashStart, e.count), (fe.block_hashes as unknown[]).map(fixtureHash), w);
        hashTotal += e.count;
        if (e.kind === 'removed') return;
        assert.equal(parentOf(e), fe.parent_block_hash == null ? null : fixtureHash(fe.parent_block_hash), w);
        assert.deepEqual(tokensOf(b, e), fe.token_ids, w);
        assert.equal(e.tokenStart, tokenTotal, w);
        tokenTotal += e.tokenCount;
        assert.equal(e.blockSize, fe.block_size, w);
        assert.equal(e.loraName, fe.lora_name ?? null, w);
        assert.deepEqual(e.extraKeys, fe.extra_keys ?? null, w);
        assert.equal(e.kvCacheSpecKind, fe.kv_cache_spec_kind ?? null, w);
        assert.equal(e.cacheSalt, null, w);
        assert.equal(e.eagle, false, w);
      });
      assert.equal(b.hashCount, hashTotal, where);
      assert.equal(b.tokenCount, tokenTotal, where);
    }
  });
}

test('int and bytes hash modes give the same identities (last 8 bytes big-endian)', () => {
  const ints = linesOf('map-batch-int.jsonl'), bytes = linesOf('map-batch-bytes.jsonl');
  const all = (l: FixtureLine): bigint[] => { const b = decoder.decode(hex(l.payload_hex)); return hashesOf(b, 0, b.hashCount); };
  ints.forEach((l, i) => assert.deepEqual(all(l), all(bytes[i])));
});

test('hash decoding agrees with msgpackr BigInt decoding on the int fixtures', () => {
  for (const l of linesOf('v026-array-batch.jsonl')) {
    const raw = unpack(hex(l.payload_hex)) as [number, { block_hashes?: (number | bigint)[] }[]];
    const want = raw[1].flatMap((e) => (e.block_hashes ?? []).map((h) => BigInt(h)));
    const b = decoder.decode(hex(l.payload_hex));
    assert.deepEqual(hashesOf(b, 0, b.hashCount), want);
  }
});

test('signed int64 / int8..int32 / negative fixint hashes are bit-cast to u64', () => {
  // ["BlockRemoved", [-1 (d3), i64 min, -1 (d0), -32 (fixint), -2^31 (d2), -2 (d1), 2^63 (cf), 0xff (cc)], "GPU"]
  const payload = hex(`92 cb41d954fc40000000 91 93 ac${Buffer.from('BlockRemoved').toString('hex')}
    98 d3ffffffffffffffff d38000000000000000 d0ff e0 d280000000 d1fffe cf8000000000000000 ccff a3475055`);
  const b = decoder.decode(payload);
  const e = b.events[0];
  assert.equal(e.kind, 'removed');
  assert.equal(b.hashes[0], 0xffffffff); assert.equal(b.hashes[1], 0xffffffff);
  assert.deepEqual(hashesOf(b, 0, 8), [2n ** 64n - 1n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 64n - 32n, 2n ** 64n - 2n ** 31n, 2n ** 64n - 2n, 2n ** 63n, 255n]);
  // Random signed values through msgpackr (BigInt -> d3 / cf).
  let x = 0x9e3779b97f4a7c15n;
  const vals: bigint[] = [];
  for (let i = 0; i < 200; i++) { x = BigInt.asUintN(64, x * 6364136223846793005n + 1442695040888963407n); vals.push(BigInt.asIntN(64, x)); }
  const b2 = decoder.decode(pack([1.5, [['BlockStored', vals, vals[0], [1, 2], 2, null, 'GPU', null, null]]]));
  assert.deepEqual(hashesOf(b2, 0, b2.hashCount), vals.map((v) => BigInt.asUintN(64, v)));
  assert.equal(parentOf(stored(b2.events[0])), BigInt.asUintN(64, vals[0]));
});

test('bin hashes: last 8 bytes big-endian; shorter bins: value of all bytes', () => {
  const long = Uint8Array.from({ length: 40 }, (_, i) => i + 1);
  const seven = Uint8Array.from([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]);
  const b = decoder.decode(pack({ ts: 0, events: [{ type: 'BlockRemoved', block_hashes: [long, seven, Uint8Array.from([0xab, 0xcd]), new Uint8Array(0)], medium: null }] }));
  assert.deepEqual(hashesOf(b, 0, 4), [0x2122232425262728n, 0x01020304050607n, 0xabcdn, 0n]);
});

test('EAGLE bigram token_ids are flattened to [a0, a1, ..., a_last, b_last]', () => {
  const pairs = [[10, 11], [11, 12], [12, 13], [13, 14]];
  const b = decoder.decode(pack([0, [['BlockStored', [5n], null, pairs, 3, null, 'GPU', null, null],
    { type: 'BlockStored', block_hashes: [6], parent_block_hash: 5, token_ids: [[1, 2]], block_size: 1 },
    ['BlockStored', [7], null, [], 16, null]]]));
  const [a, m, empty] = b.events.map(stored);
  assert.equal(a.eagle, true);
  assert.deepEqual(tokensOf(b, a), [10, 11, 12, 13, 14]);
  assert.equal(m.eagle, true);
  assert.deepEqual(tokensOf(b, m), [1, 2]);
  assert.equal(empty.eagle, false);
  assert.equal(empty.tokenCount, 0);
  // A malformed bigram (3-tuple, or mixing ints and pairs) drops the event.
  const bad = decoder.decode(pack([0, [['BlockStored', [1], null, [[1, 2, 3]], 1, null], ['BlockStored', [1], null, [[1, 2], 3], 1, null]]]));
  assert.equal(bad.events.length, 0);
  assert.equal(bad.dropped, 2);
});

test('middle-era positional tail (medium, lora_name, extra_keys, group_idx, kind, sliding_window)', () => {
  const b = decoder.decode(pack([1700000000.5, [
    ['BlockStored', [2n ** 64n - 5n, 42], 2n ** 63n + 1n, Array.from({ length: 32 }, (_, i) => 70000 + i), 16, 3, 'CPU_PINNED', 'lora-x',
      [['lora-x'], null], 2, 'sliding_window', 128],
    ['BlockRemoved', [42], 'CPU_PINNED', 2],
  ], 3]));
  assert.equal(b.dpRank, 3);
  assert.equal(b.dropped, 0);
  const s = stored(b.events[0]);
  assert.deepEqual(hashesOf(b, s.hashStart, s.count), [2n ** 64n - 5n, 42n]);
  assert.equal(parentOf(s), 2n ** 63n + 1n);
  assert.deepEqual(tokensOf(b, s), Array.from({ length: 32 }, (_, i) => 70000 + i));
  assert.deepEqual([s.tier, s.blockSize, s.loraName, s.groupIdx, s.kvCacheSpecKind], [Tier.Host, 16, 'lora-x', 2, 'sliding_window']);
  assert.deepEqual(s.extraKeys, [['lora-x'], null]);
  assert.deepEqual(b.events[1], { kind: 'removed', tier: Tier.Host, hashStart: 2, count: 1, groupIdx: 2 });
});

test('Dynamo positional tail: locality and source_kind; loosely typed tail slots count as absent', () => {
  const ev = (locality: unknown, extra: unknown[] = []): unknown[] =>
    ['BlockStored', [1], null, [1, 2], 2, null, 'GPU', null, null, 0, 'full_attention', null, locality, 'engine', ...extra];
  const b = decoder.decode(pack([0, [ev('LOCAL'), ev(null), ev('REMOTE'), ev('ELSEWHERE'), ev(7),
    ['BlockRemoved', [1], null, 0, null, null, 'REMOTE'], ['BlockRemoved', [1], '', 0, null, null, 'LOCAL', 'engine'],
    ['BlockStored', [9], null, [1], 1, null, null, null, null, [['mm-info']], 5]], 0]));
  assert.equal(b.events.length, 4);
  assert.equal(b.dropped, 4);
  const last = stored(b.events[3]);
  assert.deepEqual([last.groupIdx, last.kvCacheSpecKind], [null, null]);
  assert.deepEqual(b.events[2], { kind: 'removed', tier: Tier.Device, hashStart: 2, count: 1, groupIdx: 0 });
});

test('cache_salt: top-level wins, else the dynamo-cache-salt: tag in extra_keys[0]', () => {
  const mm = '0123456789abcdef00112233445566778899aabbccddeefffedcba9876543210';
  const b = decoder.decode(pack({ ts: 1, events: [
    { type: 'BlockStored', block_hashes: [1], parent_block_hash: null, token_ids: [1], block_size: 1, lora_name: 'adapter-a', cache_salt: 'top', extra_keys: [['dynamo-cache-salt:inner']] },
    { type: 'BlockStored', block_hashes: [2], parent_block_hash: null, token_ids: [1], block_size: 1, lora_name: 'adapter-a', extra_keys: [['adapter-a', mm, 'dynamo-cache-salt:tenant-a'], ['dynamo-cache-salt:second-block']] },
    { type: 'BlockStored', block_hashes: [3], parent_block_hash: null, token_ids: [1], block_size: 1, lora_name: 'adapter-a', extra_keys: [['adapter-a', 'dynamo-cache-salt:adapter-a']] },
    { type: 'BlockStored', block_hashes: [4], parent_block_hash: null, token_ids: [1], block_size: 1, extra_keys: [['tenant-a', 'dynamo-cache-salt:']] },
    { type: 'BlockStored', block_hashes: [5], parent_block_hash: null, token_ids: [1], block_size: 1, extra_keys: [null, ['dynamo-cache-salt:second-block']] },
    { type: 'BlockStored', block_hashes: [6], parent_block_hash: null, token_ids: [1], block_size: 1, cache_salt: '', extra_keys: [['dynamo-cache-salt:fallback']] },
  ] }));
  assert.deepEqual(b.events.map((e) => stored(e).cacheSalt), ['top', 'tenant-a', 'adapter-a', null, null, 'fallback']);
  // Positional: the extra_keys slot, and SGLang's {cache_salt} metadata map (slot 14, or the old slot 7).
  const p = decoder.decode(pack([0, [
    ['BlockStored', [1], null, [1], 1, null, 'GPU', null, [['dynamo-cache-salt:pos']]],
    ['BlockStored', [1], null, [1], 1, null, 'GPU', null, null, null, null, null, null, null, { cache_salt: 'sg' }],
    ['BlockStored', [1], null, [1], 1, null, 'GPU', { cache_salt: 'old-sg' }],
  ]]));
  assert.deepEqual(p.events.map((e) => [stored(e).cacheSalt, stored(e).loraName]), [['pos', null], ['sg', null], ['old-sg', null]]);
});

test('locality on map events: absent/LOCAL kept, REMOTE/unknown/non-string dropped', () => {
  const ev = (extra: Record<string, unknown>) => ({ type: 'BlockRemoved', block_hashes: [1], medium: 'GPU', ...extra });
  const b = decoder.decode(pack({ ts: 0, events: [ev({}), ev({ locality: 'LOCAL' }), ev({ locality: null }),
    ev({ locality: 'REMOTE' }), ev({ locality: 'local' }), ev({ locality: 1 })] }));
  assert.equal(b.events.length, 3);
  assert.equal(b.dropped, 3);
});

test('medium table, case-sensitive; unknown medium dropped', () => {
  const media: [unknown, number][] = [[null, Tier.Device], ['', Tier.Device], ['GPU', Tier.Device], ['DEVICE', Tier.Device],
    ['CPU', Tier.Host], ['CPU_PINNED', Tier.Host], ['CPU_TIER1', Tier.Host], ['CPU_TIER2', Tier.Disk], ['DISK', Tier.Disk],
    ['NVME', Tier.Disk], ['STORAGE', Tier.Disk], ['EXTERNAL', Tier.External], ['NETWORK', Tier.External],
    ['REMOTE', Tier.External], ['SHARED', Tier.External]];
  const b = decoder.decode(pack([0, media.map(([m]) => ['BlockRemoved', [1], m])]));
  assert.deepEqual(b.events.map((e) => (e as { tier: number }).tier), media.map(([, t]) => t));
  const bad = decoder.decode(pack([0, [['BlockRemoved', [1], 'FS'], ['BlockRemoved', [1], 'gpu'], ['BlockRemoved', [1], 3],
    { type: 'BlockStored', block_hashes: [1], token_ids: [1], block_size: 1, medium: 'OBJ' }, ['BlockRemoved', [2], 'GPU']]]));
  assert.equal(bad.dropped, 4);
  assert.equal(bad.events.length, 1);
  assert.equal(bad.hashCount, 1); // dropped events leave no hashes behind
  assert.deepEqual(hashesOf(bad, 0, 1), [2n]);
});

test('unknown tags, Ignored and wrong shapes are dropped; the rest of the batch survives', () => {
  const b = decoder.decode(pack([0, [['Ignored'], ['TierBlocksCleared', 'CPU'], { type: 'Nope' }, 17, 'BlockStored', [], {},
    ['BlockStored', [1], null, [1]], // too short
    ['BlockStored', ['str-hash'], null, [1], 1], ['BlockStored', [1.5], null, [1], 1], ['BlockStored', [1], null, [-1], 1],
    ['BlockStored', [1], null, [2 ** 32], 1], ['BlockStored', [1], null, [1], -1], ['BlockStored', [1], 'x', [1], 1],
    { type: 'BlockStored', block_hashes: [1], block_size: 1 }, { type: 'BlockStored', block_hashes: [1], token_ids: [1], block_size: 1, group_idx: 'x' },
    { type: 'BlockStored', block_hashes: [1], token_ids: [1], block_size: 1, extra_keys: ['not-a-list'] },
    ['AllBlocksCleared', null], { type: 'AllBlocksCleared', extra: [1, 2], block_hashes: [9], token_ids: [9] }]]));
  assert.deepEqual(b.events, [{ kind: 'cleared' }, { kind: 'cleared' }]);
  assert.equal(b.dropped, 17);
  assert.equal(b.hashCount, 0); // nothing left behind by dropped events or a cleared event's stray fields
  assert.equal(b.tokenCount, 0);
});

test('batch shapes: map with attn_dp_rank, nil rank, trailing elements, unknown keys', () => {
  const ev = ['AllBlocksCleared'];
  assert.equal(decoder.decode(pack({ attn_dp_rank: 2, events: [ev], ts: 3, future: { x: 1 } })).dpRank, 2);
  assert.equal(decoder.decode(pack({ ts: 3, events: [], data_parallel_rank: null })).dpRank, null);
  assert.equal(decoder.decode(pack([3, [ev], null])).dpRank, null);
  const t = decoder.decode(pack([3.25, [ev], 5, 'future', [1, 2]]));
  assert.deepEqual([t.ts, t.dpRank, t.events.length], [3.25, 5, 1]);
  assert.equal(decoder.decode(pack([7, []])).ts, 7); // integer ts
});

test('structural problems throw KvDecodeError', () => {
  const cases: [string, Uint8Array][] = [
    ['empty', new Uint8Array(0)],
    ['scalar batch', pack(5)],
    ['1-element batch', pack([1])],
    ['events not an array', pack([1, 'x'])],
    ['ts not a number', pack(['x', []])],
    ['bad rank', pack([1, [], -1])],
    ['map without events', pack({ ts: 1 })],
    ['trailing bytes', Uint8Array.from([...pack([1, []]), 0xc0])],
    ['0xc1 inside an event', hex('92 01 91 92 a7 49676e6f726564 c1')],
    ['2^32-1 element claim', Uint8Array.from([0x92, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff, ...new Uint8Array(93)])],
    ['hash array claim', Uint8Array.from([0x92, 0x01, 0x91, 0x92, 0xac, ...Buffer.from('BlockRemoved'), 0xdd, 0x7f, 0xff, 0xff, 0xff, 0xcf])],
    ['str length claim', Uint8Array.from([0x92, 0x01, 0x91, 0x91, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x41])],
  ];
  for (const [name, bytes] of cases) {
    const t0 = performance.now();
    assert.throws(() => decoder.decode(bytes), KvDecodeError, name);
    // not a speed test: a length claim of 2^32 must be refused up front, not looped over (that
    // would take seconds); the bound is loose enough for a loaded shared machine
    assert.ok(performance.now() - t0 < 1000, `${name} must fail without walking the claimed length`);
  }
  try { decoder.decode(new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff])); assert.fail('no throw'); }
  catch (e) { assert.ok(e instanceof KvDecodeError); assert.equal(e.code, 'bad_length'); }
  // Every truncation of every fixture payload is a structural error, never a partial batch.
  for (const file of fixtureFiles) for (const l of linesOf(file)) {
    const full = hex(l.payload_hex);
    for (let n = 0; n < full.length; n++) assert.throws(() => decoder.decode(full.subarray(0, n)), KvDecodeError, `${file} ${l.seq} cut at ${n}`);
  }
});

test('buffers grow and are reused; payload may be a view into a larger buffer', () => {
  const many = Array.from({ length: 5000 }, (_, i) => 2n ** 63n + BigInt(i));
  const big = decoder.decode(pack([0, [['BlockStored', many, null, Array.from({ length: 80000 }, (_, i) => i), 16, null]]]));
  assert.equal(big.hashCount, 5000);
  assert.equal(hashesOf(big, 4999, 1)[0], 2n ** 63n + 4999n);
  assert.equal(big.tokens[79999], 79999);
  const inner = pack([0, [['BlockRemoved', [77]]]]);
  const outer = new Uint8Array(inner.length + 10).fill(0xc1);
  outer.set(inner, 5);
  const small = decoder.decode(outer.subarray(5, 5 + inner.length));
  assert.equal(small.hashCount, 1);
  assert.equal(small.hashes, decoder.words); // the shared, reused buffer
  assert.deepEqual(hashesOf(small, 0, 1), [77n]);
});

test('round trip: random valid batches in every layout', () => {
  let s = 12345;
  const rnd = (n: number): number => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s % n; };
  const rndHash = (): bigint => (BigInt(rnd(2 ** 30)) << 34n) | BigInt(rnd(2 ** 30));
  for (let iter = 0; iter < 300; iter++) {
    const want: { hashes: bigint[]; parent: bigint | null; tokens: number[]; tier: number }[] = [];
    const events: unknown[] = [];
    for (let k = rnd(5); k >= 0; k--) {
      const nb = 1 + rnd(6), bs = 1 + rnd(4);
      const hashes = Array.from({ length: nb }, rndHash);
      const parent = rnd(2) ? rndHash() : null;
      const tokens = Array.from({ length: nb * bs }, () => rnd(3) === 0 ? rnd(128) : rnd(2 ** 32));
      const medium = ['GPU', 'CPU', 'DISK', null][rnd(4)];
      want.push({ hashes, parent, tokens, tier: [Tier.Device, Tier.Host, Tier.Disk, Tier.Device][['GPU', 'CPU', 'DISK', null].indexOf(medium)] });
      events.push(rnd(2) ? ['BlockStored', hashes, parent, tokens, bs, null, medium, null, null, 0, 'full_attention', null]
        : { type: 'BlockStored', block_hashes: hashes, parent_block_hash: parent, token_ids: tokens, block_size: bs, medium });
    }
    const b = decoder.decode(pack(rnd(2) ? [iter, events, rnd(4)] : { ts: iter, events, data_parallel_rank: 1 }));
    assert.equal(b.events.length, want.length);
    b.events.forEach((e, i) => {
      const se = stored(e);
      assert.deepEqual(hashesOf(b, se.hashStart, se.count), want[i].hashes);
      assert.equal(parentOf(se), want[i].parent);
      assert.deepEqual(tokensOf(b, se), want[i].tokens);
      assert.equal(se.tier, want[i].tier);
    });
  }
});

test('mmHashesOfBlock (Dynamo `lib/kv-router/src/protocols.rs`) with hash-wasm xxh3', async () => {
  const hasher = await createXXHash3(0, 0);
  const xxh3 = (bytes: Uint8Array, seed: bigint): bigint => {
    assert.equal(seed, 0n);
    hasher.init(); hasher.update(bytes);
    return BigInt('0x' + hasher.digest('hex'));
  };
  const pinned = await createXXHash3(1337, 0); // sanity: the spec's pinned vector xxh3(b"test data", 1337)
  pinned.init(); pinned.update(new TextEncoder().encode('test data'));
  assert.equal(BigInt('0x' + pinned.digest('hex')), 13226331709069118873n);
  const mm = 'fedcba9876543210' + '0'.repeat(48), MM = 'ABCDEF0123456789' + 'a'.repeat(48);
  const got = mmHashesOfBlock(['adapter-a', mm, 'dynamo-cache-salt:' + mm, 'plain', MM, [mm, 3], ['image-uuid-1', 0], ['', 0], [5, 1], mm.slice(1),
    ['x', 1, 2], new Uint8Array([1])], 'adapter-a', xxh3);
  assert.deepEqual(got, [0xfedcba9876543210n, 0xabcdef0123456789n, 0xfedcba9876543210n, xxh3(new TextEncoder().encode('image-uuid-1'), 0n)]);
  assert.deepEqual(mmHashesOfBlock(null, null), []);
  assert.deepEqual(mmHashesOfBlock([mm], mm), []); // a string equal to the LoRA name is never MM
  assert.throws(() => mmHashesOfBlock([['not-hex', 0]], null), TypeError);
});

test('isMainAttentionKind', () => {
  for (const k of ['full_attention', 'mla_attention', 'sink_full_attention']) assert.equal(isMainAttentionKind(k), true);
  for (const k of [null, '', 'sliding_window', 'mamba', 'FULL_ATTENTION']) assert.equal(isMainAttentionKind(k), false);
});

// ---- fuzz ----
/** The project's seeded PRNG (uniform in [0, 1)). */
const seededFloats = (seed: number): (() => number) => seededRng(seed).next;
const fuzzStats = { returned: 0, threw: 0, events: 0, dropped: 0 };
function mustReturnOrThrowKvDecodeError(bytes: Uint8Array, label: string, times: number[]): void {
  const t0 = performance.now();
  try {
    const b = decoder.decode(bytes);
    fuzzStats.returned++; fuzzStats.events += b.events.length; fuzzStats.dropped += b.dropped;
  } catch (e) {
    if (!(e instanceof KvDecodeError)) assert.fail(`${label}: ${String(e)}`);
    fuzzStats.threw++;
  }
  times.push(performance.now() - t0);
}
const WORDS = ['BlockStored', 'BlockRemoved', 'AllBlocksCleared', 'Ignored', 'type', 'block_hashes', 'parent_block_hash', 'token_ids',
  'block_size', 'medium', 'lora_name', 'cache_salt', 'extra_keys', 'group_idx', 'kv_cache_spec_kind', 'locality', 'ts', 'events',
  'data_parallel_rank', 'GPU', 'CPU', 'REMOTE', 'LOCAL', 'dynamo-cache-salt:x', '__proto__', 'x'];

test('fuzz: 5,000 random byte strings and 5,000 random msgpack values', (t) => {
  const rand = seededFloats(0xc0ffee);
  const ri = (n: number): number => Math.floor(rand() * n);
  const times: number[] = [];
  const fixturePayloads = fixtureFiles.flatMap((f) => linesOf(f).map((l) => hex(l.payload_hex)));
  for (let i = 0; i < 5000; i++) {
    let bytes: Uint8Array;
    if (i % 2 === 0) bytes = Uint8Array.from({ length: ri(200) }, () => ri(256)); // pure noise
    else { // noise with a batch-like prefix, or a fixture with mutated bytes, to get past the first header
      const base = fixturePayloads[ri(fixturePayloads.length)];
      bytes = base.slice(0, ri(base.length + 1));
      for (let k = ri(6); k >= 0; k--) if (bytes.length) bytes[ri(bytes.length)] = ri(256);
    }
    mustReturnOrThrowKvDecodeError(bytes, `bytes #${i}`, times);
  }
  const value = (depth: number): unknown => {
    const k = ri(depth > 3 ? 9 : 12);
    switch (k) {
      case 0: return null;
      case 1: return rand() < 0.5;
      case 2: return ri(300) - 150;
      case 3: return BigInt.asIntN(64, BigInt(ri(2 ** 32)) << BigInt(ri(33)));
      case 4: return BigInt.asUintN(64, BigInt(ri(2 ** 32)) << 32n | BigInt(ri(2 ** 32)));
      case 5: return rand() * 1e6;
      case 6: case 7: return WORDS[ri(WORDS.length)];
      case 8: return Uint8Array.from({ length: ri(40) }, () => ri(256));
      case 9: case 10: return Array.from({ length: ri(6) }, () => value(depth + 1));
      default: { const o: Record<string, unknown> = {}; for (let j = ri(6); j > 0; j--) Object.defineProperty(o, WORDS[ri(WORDS.length)], { value: value(depth + 1), enumerable: true, writable: true, configurable: true }); return o; }
    }
  };
  const event = (): unknown => {
    const tag = WORDS[ri(4)];
    if (rand() < 0.5) return [tag, ...Array.from({ length: ri(16) }, () => (rand() < 0.5 ? value(2) : [2n ** 63n, ri(100)]))];
    const o: Record<string, unknown> = { type: tag };
    for (let j = ri(10); j > 0; j--) o[WORDS[4 + ri(12)]] = rand() < 0.3 ? [ri(100), 2n ** 64n - 1n] : value(2);
    return o;
  };
  for (let i = 0; i < 5000; i++) {
    const v = i % 3 === 0 ? value(0) : i % 3 === 1 ? [rand() * 1e9, Array.from({ length: ri(5) }, event), value(3)]
      : { ts: value(3), events: Array.from({ length: ri(5) }, event), data_parallel_rank: ri(3) };
    mustReturnOrThrowKvDecodeError(pack(v), `value #${i}`, times);
  }
  const max = Math.max(...times);
  t.diagnostic(`fuzz: ${times.length} inputs, ${fuzzStats.returned} decoded (${fuzzStats.events} events kept, ${fuzzStats.dropped} dropped), ${fuzzStats.threw} KvDecodeError; slowest ${max.toFixed(2)} ms`);
  // timing is reported, not asserted: the machine is shared (benchmarks measure speed)
});

test('decoder-owned events: reused from batch to batch, each batch decoded whole (past the reuse pool too)', () => {
  const d = new KvBatchDecoder();
  // 5,000 per-block removes (more than the decoder keeps for reuse), media by their bytes, a dropped one in between
  const removes = Array.from({ length: 5000 }, (_, i) => ['BlockRemoved', [i + 1], i % 3 === 0 ? 'CPU' : null, i % 7]);
  removes.splice(10, 0, ['BlockRemoved', [99], 'CPU_TIER9']);
  const big = d.decode(pack([1, removes]));
  assert.equal(big.dropped, 1);
  assert.equal(big.events.length, 5000);
  big.events.forEach((e, i) => {
    assert.deepEqual(e, { kind: 'removed', tier: i % 3 === 0 ? Tier.Host : Tier.Device, hashStart: i, count: 1, groupIdx: i % 7 });
  });
  assert.deepEqual(hashesOf(big, 4999, 1), [5000n]);
  // the next batch: fewer events, the same objects rewritten; stored events and extra_keys as before
  const next = d.decode(pack([2, [['BlockRemoved', [7, 8], 'DISK'],
    { type: 'BlockStored', block_hashes: [1, 2], token_ids: [1, 2], block_size: 1, extra_keys: [null, null] },
    { type: 'BlockStored', block_hashes: [3, 4], token_ids: [3, 4], block_size: 1, extra_keys: [null, [['mm', 0]]] }]]));
  assert.equal(next.events.length, 3);
  assert.deepEqual(next.events[0], { kind: 'removed', tier: Tier.Disk, hashStart: 0, count: 2, groupIdx: null });
  assert.deepEqual(stored(next.events[1]).extraKeys, [null, null]);
  assert.deepEqual(stored(next.events[2]).extraKeys, [null, [['mm', 0]]]);
  assert.deepEqual(d.decode(pack([3, []])).events, []);
});

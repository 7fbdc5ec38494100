/**
 * Prompt normalisation (Dynamo `lib/kv-router/src/services/selection/core/run.rs`, Dynamo `lib/kv-router/src/protocols.rs`): the index is always queried with public local
 * hashes; tracking hashes are the public chain, the keyed chain, or random without KV reuse;
 * cache_salt, LoRA, multimodal info and eagle windows change what they should; routing tokens win.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PromptNormalizer } from '../../../src/core/index/prompt.js';
import { blockHashes, publicBlockSeed, sequenceHashes } from '../../../src/core/index/hashing.js';
import { seededRng } from '../../../src/core/random.js';
import { makeCore, worker } from './core-helpers.js';

const scope = { modelName: 'model', routingGroup: 'default', blockSize: 4, isEagle: false };
const tokens = Array.from({ length: 12 }, (_, i) => i);
const pub = new PromptNormalizer({ mode: 'public-xxh3-v1', key: null, keyId: null }, seededRng(1));
const keyed = new PromptNormalizer({ mode: 'keyed-xxh3-v1', key: new Uint8Array(32).fill(0x5a), keyId: '2026-01' }, seededRng(1));

test('public mode: local hashes and the public chain; the protocols.rs example vector', () => {
  const p = pub.normalize({ token_ids: [0, 1, 2, 3, 4, 5, 6, 7] }, scope, true);
  assert.deepEqual(Array.from(p.locals!), [9143094415614847814n, 12124091508212882195n]);
  assert.deepEqual(Array.from(p.seq), [9143094415614847814n, 9510318385840434533n]);
  assert.equal(p.isl, 8);
  assert.equal(pub.normalize({ token_ids: [0, 1, 2] }, scope, true).nBlocks, 0, 'a partial tail is never hashed');
});

test('keyed tracking keeps the public block hashes for the index and changes only the chain', () => {
  const a = pub.normalize({ token_ids: tokens }, scope, true);
  const b = keyed.normalize({ token_ids: tokens }, scope, true);
  assert.deepEqual(Array.from(b.locals!), Array.from(a.locals!));
  assert.notDeepEqual(Array.from(b.seq), Array.from(a.seq));
  assert.deepEqual(Array.from(keyed.normalize({ token_ids: tokens }, scope, true).seq), Array.from(b.seq), 'deterministic');
});

test('without KV reuse the tracking hashes are random per block; the index hashes stay public', () => {
  const a = pub.normalize({ token_ids: tokens }, scope, false);
  const b = pub.normalize({ token_ids: tokens }, scope, false);
  assert.notDeepEqual(Array.from(a.seq), Array.from(b.seq));
  assert.deepEqual(Array.from(a.locals!), Array.from(b.locals!));
});

test('cache_salt and lora_name enter the seed; empty strings are absent', () => {
  const plain = Array.from(pub.normalize({ token_ids: tokens }, scope, true).locals!);
  const salted = Array.from(pub.normalize({ token_ids: tokens, cache_salt: 'tenant-a' }, scope, true).locals!);
  assert.notDeepEqual(salted, plain);
  assert.deepEqual(salted, blockHashes(tokens, 4, { seed: publicBlockSeed(null, 'tenant-a') }));
  assert.deepEqual(Array.from(pub.normalize({ token_ids: tokens, cache_salt: '', lora_name: '' }, scope, true).locals!), plain);
  assert.deepEqual(Array.from(pub.normalize({ token_ids: tokens, lora_name: 'adapter-a' }, scope, true).locals!).slice(0, 2),
    [6665157333201000639n, 11721812545976571723n].map((x) => x), 'the protocols.rs LoRA vector covers tokens 0..7');
});

test('multimodal info changes only its blocks; routing tokens win over token_ids', () => {
  const mm = pub.normalize({ token_ids: tokens, block_mm_infos: [null, { mm_objects: [{ mm_hash: 42n, offsets: [] }] }] }, scope, true);
  const plain = pub.normalize({ token_ids: tokens }, scope, true);
  assert.equal(mm.locals![0], plain.locals![0]);
  assert.notEqual(mm.locals![1], plain.locals![1]);
  assert.equal(mm.locals![2], plain.locals![2]);
  const routed = pub.normalize({ token_ids: [7, 7, 7, 7], mm_routing_info: { routing_token_ids: tokens } }, scope, true);
  assert.deepEqual(Array.from(routed.locals!), Array.from(plain.locals!));
  assert.equal(routed.isl, 12);
});

test('eagle windows: 4 tokens -> 0 blocks, 5 and 8 -> 1, 9 -> 2 (block size 4)', () => {
  const n = (k: number) => pub.normalize({ token_ids: tokens.slice(0, k), is_eagle: true }, scope, true).nBlocks;
  assert.deepEqual([n(4), n(5), n(8), n(9)], [0, 1, 1, 2]);
  assert.equal(pub.normalize({ token_ids: tokens.slice(0, 9) }, { ...scope, isEagle: true }, true).nBlocks, 2, 'partition default');
});

test('trusted hash inputs are used as given (no relabelling in keyed mode)', () => {
  const p = keyed.normalize({ block_hashes: [1n, 2n], sequence_hashes: [3n, 0xffffffffffffffffn], isl_tokens: 8 }, scope, true);
  assert.deepEqual(Array.from(p.locals!), [1n, 2n]);
  assert.deepEqual(Array.from(p.seq), [3n, 0xffffffffffffffffn]);
});

test('keyed mode through the core: select_and_reserve returns keyed sequence hashes, overlap uses public ones', async () => {
  const key = new Uint8Array(32).fill(0x5a);
  const { core } = makeCore({ DYN_ROUTER_TRACKING_HASH: 'keyed-xxh3-v1', DYN_ROUTER_TRACKING_KEY_FILE: '/unused', DYN_ROUTER_TRACKING_KEY_ID: '2026-01' },
    { trackingKey: key });
  core.upsertWorker(worker(1));
  const r = await core.selectAndReserve({ model_name: 'model', selection_id: 'k', token_ids: tokens });
  const publicSeq = sequenceHashes(blockHashes(tokens, 4));
  assert.notDeepEqual(r.sequence_hashes!.map((h) => BigInt.asUintN(64, h)), publicSeq);
  const again = await core.select({ model_name: 'model', token_ids: tokens });
  assert.equal(again.overlap.gpu, 12, 'the approximate index recorded the public hashes');
});

test('tryNewLocal reports an invalid tracking-hash configuration as an error result', async () => {
  const { SelectionCore } = await import('../../../src/core/core.js');
  const { parseRouterConfig } = await import('../../../src/core/config/config.js');
  const cfg = parseRouterConfig({ DYN_ROUTER_TRACKING_HASH: 'keyed-xxh3-v1', DYN_ROUTER_TRACKING_KEY_FILE: '/k', DYN_ROUTER_TRACKING_KEY_ID: 'id' });
  const missing = SelectionCore.tryNewLocal(cfg, {});
  assert.equal(missing.ok, false);
  assert.match(!missing.ok ? missing.error.message : '', /32-byte tracking key/);
  const short = SelectionCore.tryNewLocal(cfg, { trackingKey: new Uint8Array(31) });
  assert.equal(short.ok, false);
  assert.equal(SelectionCore.tryNewLocal(cfg, { trackingKey: new Uint8Array(32) }).ok, true);
  const badTtl = SelectionCore.tryNewLocal(parseRouterConfig({}), { sessionAffinity: { ttlSecs: 0, mode: 'hard' } });
  assert.match(!badTtl.ok ? badTtl.error.message : '', /session-affinity-ttl-secs/);
});

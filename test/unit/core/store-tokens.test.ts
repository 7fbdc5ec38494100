import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WasmPrefixIndex } from '../../../src/core/index/wasm-index.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { PUBLIC_SEED, blockHashes, publicBlockSeed } from '../../../src/core/index/hashing.js';

/** Writes an event's tokens, engine hashes and seed into scratch the way the KV-event path does. */
function storeTokens(ix: WasmPrefixIndex, slot: number, tokens: number[], exts: bigint[], bs: number, seed: bigint,
  parent: bigint | null = null): number {
  const w = ix.wasm;
  w.writeTokens(tokens);
  w.writeExts(exts);
  w.setSeed(seed);
  w.setParent(parent ?? 0n);
  return ix.storeTokensN(slot, Tier.Device, parent !== null, exts.length, tokens.length, bs, false, false);
}

test('storeTokensN hashes tokens in wasm and stores what storeN would store', () => {
  const tokens = Array.from({ length: 48 }, (_, i) => 1000 + i);
  const exts = [11n, 12n, 13n];
  const viaTokens = new WasmPrefixIndex();
  assert.equal(storeTokens(viaTokens, 0, tokens, exts, 16, PUBLIC_SEED), 3);
  const locals = blockHashes(tokens, 16);
  const viaBlocks = new WasmPrefixIndex();
  viaBlocks.store(0, Tier.Device, null, locals.map((local, i) => ({ local, ext: exts[i] })));
  assert.deepEqual(viaTokens.dumpHoldings(), viaBlocks.dumpHoldings());
  assert.deepEqual(viaTokens.match(locals), [{ slot: 0, device: 3, hostExt: 0, diskExt: 0, externalExt: 0 }]);
  viaTokens.destroy(); viaBlocks.destroy();
});

test('storeTokensN stops at the last complete block and uses the seed in P_SEED', () => {
  const ix = new WasmPrefixIndex();
  const tokens = Array.from({ length: 40 }, (_, i) => i); // 2.5 blocks of 16 for 3 engine hashes
  const seed = publicBlockSeed('adapter-a', null);
  assert.equal(storeTokens(ix, 1, tokens, [21n, 22n, 23n], 16, seed), 2);
  assert.equal(ix.match(blockHashes(tokens, 16)).length, 0, 'unsalted hashes do not match LoRA blocks');
  assert.equal(ix.match(blockHashes(tokens, 16, { seed }))[0].device, 2);
  ix.destroy();
});

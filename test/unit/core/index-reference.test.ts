/**
 * Hand-written cases for every rule of the prefix-index contract (src/core/index-types.ts),
 * run against the reference model; plus checks of the workload generator and Mooncake helpers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StoreStatus, Tier, canonicalHoldings } from '../../../src/core/index/index-types.js';
import type { BlockRef, Holding, MatchRow } from '../../../src/core/index/index-types.js';
import { ReferenceIndex } from '../../reference/index-model.js';
import { applyOp, randomWorkload } from '../../reference/workload.js';
import { seededRng } from '../../../src/core/random.js';
import { hashIdToExt, hashIdToU64, parseMooncake, replayMooncake } from '../../reference/mooncake.js';

const D = Tier.Device;
const H = Tier.Host;
const K = Tier.Disk;
const X = Tier.External;

// Locals are 1n, 2n, ... ("a", "b", ...); exts are 1000 + something, so they never coincide.
const a = 1n, b = 2n, c = 3n, d = 4n, e = 5n, q = 9n;
const A = 1001n, B = 1002n, C = 1003n, Dx = 1004n, E = 1005n;
const blk = (ext: bigint, local: bigint): BlockRef => ({ ext, local });
const ABC = [blk(A, a), blk(B, b), blk(C, c)];
const row = (slot: number, device: number, hostExt = 0, diskExt = 0, externalExt = 0): MatchRow =>
  ({ slot, device, hostExt, diskExt, externalExt });
const canon = (ix: ReferenceIndex): string[] => canonicalHoldings(ix.dumpHoldings());

describe('device store', () => {
  it('stores a chain from the root and matches every prefix', () => {
    const ix = new ReferenceIndex();
    assert.equal(ix.store(0, D, null, ABC), 3);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 3)]);
    assert.deepEqual(ix.match([a, b]), [row(0, 2)]);
    assert.deepEqual(ix.match([a, q, c]), [row(0, 1)]);
    assert.deepEqual(ix.match([a, b, c, d]), [row(0, 3)]);
    assert.deepEqual(ix.match([b, c]), []);
    assert.deepEqual(ix.match([]), []);
    assert.equal(ix.treeSize(0, D), 3);
    assert.equal(ix.treeSize(1, D), 0);
  });

  it('continues from a parent the slot holds', () => {
    const ix = new ReferenceIndex();
    assert.equal(ix.store(0, D, null, [blk(A, a)]), 1);
    assert.equal(ix.store(0, D, A, [blk(B, b), blk(C, c)]), 2);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 3)]);
    assert.equal(ix.store(0, D, B, [blk(Dx, d)]), 1); // branch under b
    assert.deepEqual(ix.match([a, b, d]), [row(0, 3)]);
    assert.equal(ix.treeSize(0, D), 4);
  });

  it('unknown parent (for this slot) -> PARENT_NOT_FOUND and no change', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, ABC);
    const before = canon(ix);
    assert.equal(ix.store(0, D, 999n, [blk(Dx, d)]), StoreStatus.ParentNotFound);
    assert.equal(ix.store(1, D, A, [blk(Dx, d)]), StoreStatus.ParentNotFound); // slot 0's ext, not slot 1's
    assert.equal(ix.store(1, D, A, []), StoreStatus.ParentNotFound);
    assert.deepEqual(canon(ix), before);
    assert.equal(ix.treeSize(1, D), 0);
    assert.deepEqual(ix.match([a, b, c, d]), [row(0, 3)]);
  });

  it('empty stores: 0 from the root or a held parent', () => {
    const ix = new ReferenceIndex();
    assert.equal(ix.store(0, D, null, []), 0);
    ix.store(0, D, null, [blk(A, a)]);
    assert.equal(ix.store(0, D, A, []), 0);
    assert.equal(ix.store(0, H, 77n, []), 0);
    assert.equal(ix.treeSize(0, D), 1);
  });

  it('invalid sequences -> INVALID_SEQUENCE and no change (checked before the parent)', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a)]);
    const before = canon(ix);
    assert.equal(ix.store(0, D, null, [blk(B, b), blk(C, c), blk(B, d)]), StoreStatus.InvalidSequence);
    assert.equal(ix.store(0, D, A, [blk(B, b), blk(A, c)]), StoreStatus.InvalidSequence);
    assert.equal(ix.store(0, D, A, [blk(A, b)]), StoreStatus.InvalidSequence);
    assert.equal(ix.store(0, D, 999n, [blk(B, b), blk(B, c)]), StoreStatus.InvalidSequence); // unknown parent too
    assert.equal(ix.store(0, H, null, [blk(B, b), blk(B, c)]), StoreStatus.InvalidSequence);
    assert.equal(ix.store(0, K, C, [blk(C, c)]), StoreStatus.InvalidSequence);
    assert.deepEqual(canon(ix), before);
    assert.equal(ix.treeSize(0, H), 0);
    assert.equal(ix.treeSize(0, K), 0);
  });

  it('re-key: storing a held node under a new ext replaces the old ext', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a), blk(B, b)]);
    assert.equal(ix.store(0, D, null, [blk(2001n, a)]), 1);
    assert.equal(ix.treeSize(0, D), 2);
    assert.equal(ix.store(0, D, A, [blk(C, c)]), StoreStatus.ParentNotFound);
    assert.equal(ix.remove(0, D, [A]), 0);
    assert.equal(ix.store(0, D, 2001n, [blk(C, c)]), 1);
    assert.deepEqual(ix.match([a, b]), [row(0, 2)]);
    assert.deepEqual(ix.match([a, c]), [row(0, 2)]);
    const bHolding = ix.dumpHoldings().find((h) => h.ext === B);
    assert.equal(bHolding?.parentExt, 2001n);
    // the old ext is free again for this slot, for any node
    assert.equal(ix.store(0, D, null, [blk(A, d)]), 1);
    assert.deepEqual(ix.match([d]), [row(0, 1)]);
    assert.equal(ix.remove(0, D, [2001n]), 1); // last holder of a: b and c go with it
    assert.equal(ix.treeSize(0, D), 1);
  });

  it('re-key in a continuation, and another slot keeps its own ext for the node', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, ABC);
    ix.store(1, D, null, ABC);
    assert.equal(ix.store(0, D, A, [blk(2002n, b)]), 1);
    assert.equal(ix.remove(1, D, [B]), 1); // slot 1 still uses B
    assert.deepEqual(ix.match([a, b, c]), [row(0, 3), row(1, 1)]);
    assert.equal(ix.store(0, D, 2002n, [blk(Dx, d)]), 1);
    assert.equal(ix.treeSize(0, D), 4);
  });

  it('ext conflict stops the store at that block; earlier blocks stay applied', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a), blk(B, b)]);
    // B is already slot 0's ext for node b; using it for c (absent) stops at block 1
    assert.equal(ix.store(0, D, null, [blk(A, a), blk(B, c), blk(Dx, d)]), 1);
    assert.deepEqual(ix.match([a, c]), [row(0, 1)]);
    assert.equal(ix.treeSize(0, D), 2);
    // conflict at the first block: nothing applied
    assert.equal(ix.store(0, D, null, [blk(A, c), blk(Dx, d)]), 0);
    assert.deepEqual(ix.match([c]), []);
    // child exists but the ext maps to another node
    ix.store(0, D, A, [blk(C, c)]);
    assert.equal(ix.store(0, D, A, [blk(B, c)]), 0);
    assert.equal(ix.dumpHoldings().find((h) => h.local === c)?.ext, C);
    // another slot may use the same ext for another node
    assert.equal(ix.store(1, D, null, [blk(A, a), blk(B, c)]), 2);
    assert.deepEqual(ix.match([a, c]), [row(0, 2), row(1, 2)]);
  });

  it('high-bit (>= 2^63) hashes work as exts and locals', () => {
    const ix = new ReferenceIndex();
    const hi = (k: bigint): bigint => (1n << 63n) | k;
    const top = 0xffffffffffffffffn;
    assert.equal(ix.store(3, D, null, [blk(hi(1n), hi(2n)), blk(top, hi(3n))]), 2);
    assert.equal(ix.store(3, H, top, [blk(hi(5n), top)]), 1);
    assert.deepEqual(ix.match([hi(2n), hi(3n), top]), [row(3, 2, 1)]);
    assert.equal(ix.remove(3, D, [top, hi(1n)]), 2);
    assert.equal(ix.treeSize(3, D), 0);
  });
});

describe('device remove / clear / removeSlot', () => {
  it('remove of a non-last holder keeps the node for the others', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a), blk(B, b)]);
    ix.store(1, D, null, [blk(A, a), blk(B, b)]);
    assert.equal(ix.remove(0, D, [B]), 1);
    assert.deepEqual(ix.match([a, b]), [row(0, 1), row(1, 2)]);
    assert.equal(ix.treeSize(0, D), 1);
    assert.equal(ix.treeSize(1, D), 2);
  });

  it('remove counts only exts found (unknown and repeated exts are skipped)', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a), blk(B, b)]);
    assert.equal(ix.remove(0, D, [999n]), 0);
    assert.equal(ix.remove(1, D, [A]), 0);
    assert.equal(ix.remove(0, D, [B, 999n, B]), 1);
    assert.equal(ix.remove(0, D, []), 0);
    assert.equal(ix.treeSize(0, D), 1);
  });

  it('remove of the last holder cascades: other slots lose the deeper blocks', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a)]);
    ix.store(1, D, null, ABC);
    assert.equal(ix.remove(1, D, [A]), 1); // slot 0 still holds a: nothing cascades
    assert.equal(ix.treeSize(1, D), 2);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 1)]); // slot 1 holds b, c but not a
    assert.equal(ix.remove(0, D, [A]), 1); // a has no holder now: its subtree goes
    assert.equal(ix.treeSize(1, D), 0);
    assert.equal(ix.remove(1, D, [B, C]), 0); // vanished: not counted
    assert.deepEqual(ix.dumpHoldings(), []);
    // the node is really gone: a fresh a has no children
    ix.store(2, D, null, [blk(A, a)]);
    assert.deepEqual(ix.match([a, b, c]), [row(2, 1)]);
    assert.equal(ix.store(1, D, null, [blk(A, a), blk(B, b)]), 2); // slot 1's exts are free again
  });

  it('a cascade inside one remove: later exts of the same call are not counted', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, ABC);
    ix.store(1, D, null, [...ABC, blk(Dx, d)]);
    assert.equal(ix.remove(0, D, [B]), 1); // slot 1 still holds b
    assert.equal(ix.treeSize(0, D), 2);
    assert.equal(ix.remove(1, D, [B, C, Dx]), 1); // b's last holder: c, d vanish first
    assert.equal(ix.treeSize(0, D), 1);
    assert.equal(ix.treeSize(1, D), 1);
    assert.equal(ix.remove(0, D, [C]), 0);
    assert.deepEqual(ix.match([a, b, c, d]), [row(0, 1), row(1, 1)]);
  });

  it('clear of one slot and one tier cascades like remove and leaves other tiers', () => {
    const ix = new ReferenceIndex();
    ix.store(1, D, null, [blk(A, a), blk(B, b)]);
    ix.store(0, D, null, [blk(A, a)]);
    ix.store(0, H, A, [blk(B, b)]);
    ix.store(2, D, null, [blk(E, e)]);
    ix.remove(1, D, [A]);
    ix.clear(0, D);
    assert.equal(ix.treeSize(0, D), 0);
    assert.equal(ix.treeSize(1, D), 0); // b went with a
    assert.equal(ix.treeSize(0, H), 1); // host untouched
    assert.deepEqual(ix.match([a, b]), []); // host edge (A, b) continues only from a device a
    assert.deepEqual(ix.match([e]), [row(2, 1)]);
    ix.clear(0, H);
    assert.equal(ix.treeSize(0, H), 0);
    assert.deepEqual(ix.match([a, b]), []);
    ix.clear(7, D); // unknown slot: no-op
    ix.clear(7, -1);
  });

  it('clear(slot, -1) and removeSlot drop every tier of that slot only', () => {
    for (const how of ['clear', 'removeSlot'] as const) {
      const ix = new ReferenceIndex();
      for (const s of [0, 1]) {
        ix.store(s, D, null, [blk(A, a)]);
        ix.store(s, H, A, [blk(B, b)]);
        ix.store(s, K, B, [blk(C, c)]);
        ix.store(s, X, C, [blk(Dx, d)]);
      }
      if (how === 'clear') ix.clear(0, -1);
      else ix.removeSlot(0);
      for (const t of [D, H, K, X]) {
        assert.equal(ix.treeSize(0, t), 0, `${how} tier ${t}`);
        assert.equal(ix.treeSize(1, t), 1, `${how} tier ${t}`);
      }
      assert.deepEqual(ix.match([a, b, c, d]), [row(1, 1, 1, 1, 1)]);
      assert.equal(ix.store(0, D, A, [blk(B, b)]), StoreStatus.ParentNotFound);
    }
  });
});

describe('device match', () => {
  it('needs contiguous holding from the root (depth 1 and 3 but not 2 -> 1)', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, ABC);
    ix.store(1, D, null, [blk(A, a), blk(B, b)]);
    ix.remove(0, D, [B]);
    assert.equal(ix.treeSize(0, D), 2);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 1), row(1, 2)]);
  });

  it('one row per slot with a nonzero count, sorted by slot', () => {
    const ix = new ReferenceIndex();
    ix.store(9, D, null, ABC);
    ix.store(2, D, null, [blk(A, a)]);
    ix.store(5, D, null, [blk(A, a), blk(B, b)]);
    ix.store(4, D, null, [blk(E, e)]);
    ix.store(6, H, null, [blk(E, e)]);
    assert.deepEqual(ix.match([a, b, c]), [row(2, 1), row(5, 2), row(9, 3)]);
    assert.deepEqual(ix.match([e]), [row(4, 1), row(6, 0, 1)]);
  });
});

describe('lower tiers', () => {
  /** Slot 0: device a,b; host c after b. */
  const base = (): ReferenceIndex => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a), blk(B, b)]);
    assert.equal(ix.store(0, H, B, [blk(C, c)]), 1);
    return ix;
  };

  it('a tier continues from the device prefix (device 2, host ext 1)', () => {
    const ix = base();
    assert.deepEqual(ix.match([a, b, c]), [row(0, 2, 1)]);
    assert.deepEqual(ix.match([a, b]), [row(0, 2)]);
    assert.deepEqual(ix.match([a, b, d]), [row(0, 2)]);
    assert.deepEqual(ix.match([a, c]), [row(0, 1)]); // (A, c) is not an edge
  });

  it('offload copies of device blocks count only beyond the device prefix', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, [blk(A, a), blk(B, b)]);
    assert.equal(ix.store(0, H, null, [blk(A, a), blk(B, b), blk(C, c)]), 3);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 2, 1)]);
    ix.remove(0, D, [B]);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 1, 2)]);
    ix.remove(0, D, [A]);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 0, 3)]);
  });

  it('tier root entries serve a slot with no device blocks', () => {
    const ix = base();
    assert.equal(ix.store(1, H, null, [blk(A, a), blk(B, b)]), 2);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 2, 1), row(1, 0, 2)]);
    assert.equal(ix.store(2, K, null, [blk(A, a)]), 1);
    assert.deepEqual(ix.match([a]), [row(0, 1), row(1, 0, 1), row(2, 0, 0, 1)]);
  });

  it('disk continues after host; external after disk', () => {
    const ix = base();
    assert.equal(ix.store(0, K, C, [blk(Dx, d)]), 1);
    assert.equal(ix.store(0, X, Dx, [blk(E, e)]), 1);
    assert.deepEqual(ix.match([a, b, c, d, e]), [row(0, 2, 1, 1, 1)]);
    assert.deepEqual(ix.match([a, b, c, d]), [row(0, 2, 1, 1)]);
    // disk from the device ext is not a continuation once host matched c
    ix.store(0, K, B, [blk(2003n, c)]);
    assert.deepEqual(ix.match([a, b, c, d]), [row(0, 2, 1, 1)]);
  });

  it('disk continues from the device prefix when host has 0 hits', () => {
    const ix = new ReferenceIndex();
    ix.store(2, D, null, [blk(A, a), blk(B, b)]);
    ix.store(2, H, A, [blk(B, b)]); // host copy of b: covered by device, 0 hits at pos 2
    assert.equal(ix.store(2, K, B, [blk(C, c)]), 1);
    assert.deepEqual(ix.match([a, b, c]), [row(2, 2, 0, 1)]);
    // external with no host/disk hits continues from the device too
    ix.store(3, D, null, [blk(A, a)]);
    ix.store(3, X, A, [blk(B, b), blk(C, c)]);
    assert.deepEqual(ix.match([a, b, c]), [row(2, 2, 0, 1), row(3, 1, 0, 0, 2)]);
  });

  it('existing mapping wins for a conflicting edge; the walk still moves on', () => {
    const ix = base();
    assert.equal(ix.store(3, H, B, [blk(2009n, c)]), 0); // edge (B, c) -> C exists
    assert.equal(ix.treeSize(3, H), 0);
    assert.equal(ix.store(3, H, B, [blk(2009n, c), blk(Dx, d)]), 1); // d keyed (2009, d)
    ix.store(3, D, null, [blk(A, a), blk(B, b)]);
    assert.deepEqual(ix.match([a, b, c, d]), [row(0, 2, 1), row(3, 2)]);
    // same edge with the same child ext is shared; counted again when re-stored
    assert.equal(ix.store(3, H, B, [blk(C, c)]), 1);
    assert.equal(ix.store(3, H, B, [blk(C, c)]), 1);
    assert.equal(ix.treeSize(3, H), 2);
    assert.deepEqual(ix.match([a, b, c, d]), [row(0, 2, 1), row(3, 2, 1)]);
    // the shared edge survives one owner's remove
    assert.equal(ix.remove(0, H, [C, C]), 1);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 2), row(3, 2, 1)]);
  });

  it('an ext the slot already maps to another edge is ignored; never PARENT_NOT_FOUND', () => {
    const ix = base();
    assert.equal(ix.store(0, H, null, [blk(C, q)]), 0); // C is slot 0's host ext of (B, c)
    assert.equal(ix.store(0, H, 4242n, [blk(E, e)]), 1); // any parent is fine
    assert.equal(ix.treeSize(0, H), 2);
    assert.equal(ix.store(1, H, null, [blk(C, q)]), 1); // another slot: fine
    assert.deepEqual(ix.match([q]), [row(1, 0, 1)]);
  });

  it('tier remove: found count, edge deleted with its last owner', () => {
    const ix = base();
    ix.store(1, D, null, [blk(A, a), blk(B, b)]);
    ix.store(1, H, B, [blk(C, c)]);
    assert.equal(ix.remove(0, H, [C, 999n]), 1);
    assert.equal(ix.remove(0, K, [C]), 0);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 2), row(1, 2, 1)]);
    assert.equal(ix.remove(1, H, [C]), 1);
    assert.equal(ix.store(2, H, B, [blk(2010n, c)]), 1); // the key is free again
    assert.deepEqual(ix.dumpHoldings().filter((h) => h.tier === H).map((h) => h.ext), [2010n]);
  });

  it('tier edges do not cascade with device removes', () => {
    const ix = base();
    ix.remove(0, D, [A, B]);
    assert.equal(ix.treeSize(0, D), 0);
    assert.equal(ix.treeSize(0, H), 1);
    assert.deepEqual(ix.match([a, b, c]), []);
    ix.store(0, D, null, [blk(A, a), blk(B, b)]);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 2, 1)]);
  });

  it('treeSize is per tier', () => {
    const ix = base();
    ix.store(0, K, C, [blk(Dx, d), blk(E, e)]);
    ix.store(0, X, null, [blk(A, a)]);
    assert.deepEqual([D, H, K, X].map((t) => ix.treeSize(0, t)), [2, 1, 2, 1]);
    ix.clear(0, K);
    assert.deepEqual([D, H, K, X].map((t) => ix.treeSize(0, t)), [2, 1, 0, 1]);
  });

  it('a full device match leaves nothing for the tiers', () => {
    const ix = base();
    ix.store(0, D, B, [blk(C, c)]);
    assert.deepEqual(ix.match([a, b, c]), [row(0, 3)]);
  });
});

describe('dumpHoldings', () => {
  it('lists device holdings breadth-first, skips unreachable ones, then host, disk, external', () => {
    const ix = new ReferenceIndex();
    ix.store(0, D, null, ABC);
    ix.store(1, D, null, [blk(2001n, a), blk(2002n, b)]);
    ix.remove(1, D, [2001n]); // slot 1 keeps b but can never match it
    ix.store(0, X, C, [blk(Dx, d)]);
    ix.store(0, K, null, [blk(E, e)]);
    ix.store(2, H, A, [blk(B, b)]);
    const h = ix.dumpHoldings();
    const want: Holding[] = [
      { slot: 0, tier: D, ext: A, parentExt: null, local: a },
      { slot: 0, tier: D, ext: B, parentExt: A, local: b },
      { slot: 0, tier: D, ext: C, parentExt: B, local: c },
      { slot: 2, tier: H, ext: B, parentExt: A, local: b },
      { slot: 0, tier: K, ext: E, parentExt: null, local: e },
      { slot: 0, tier: X, ext: Dx, parentExt: C, local: d },
    ];
    assert.deepEqual(h, want);
  });

  it('breadth-first: every device holding comes after its parent holding', () => {
    const ix = new ReferenceIndex();
    for (const o of randomWorkload({ seed: 7, slots: 6, ops: 3000, tiers: true, sharedPrefixes: 3, maxDepth: 10 })) applyOp(ix, o);
    const h = ix.dumpHoldings();
    const seen = new Set<string>();
    let lastTier: number = D;
    for (const x of h) {
      assert.ok(x.tier >= lastTier, 'tiers in order');
      lastTier = x.tier;
      if (x.tier !== D) continue;
      if (x.parentExt !== null) assert.ok(seen.has(`${x.slot}:${x.parentExt}`), 'parent listed first');
      seen.add(`${x.slot}:${x.ext}`);
    }
    assert.ok(h.length > 50);
  });

  it('replayed into a fresh index gives identical match results', () => {
    for (const seed of [11, 12, 13]) {
      const ops = randomWorkload({ seed, slots: 8, ops: 4000, tiers: true, sharedPrefixes: 4, maxDepth: 12 });
      const ix = new ReferenceIndex();
      for (const o of ops) applyOp(ix, o);
      const dump = ix.dumpHoldings();
      const fresh = new ReferenceIndex();
      for (const x of dump) assert.equal(fresh.store(x.slot, x.tier, x.parentExt, [{ ext: x.ext, local: x.local }]), 1);
      assert.deepEqual(canon(fresh), canonicalHoldings(dump));
      // queries: every match op, and every prefix of every dumped device path
      const queries: bigint[][] = ops.flatMap((o) => (o.op === 'match' ? [o.locals] : []));
      const pathOf = new Map<string, bigint[]>();
      for (const x of dump) {
        if (x.tier !== D) continue;
        const p = [...(x.parentExt === null ? [] : pathOf.get(`${x.slot}:${x.parentExt}`)!), x.local];
        pathOf.set(`${x.slot}:${x.ext}`, p);
        queries.push(p);
      }
      assert.ok(queries.length > 500);
      let nonEmpty = 0;
      for (const qy of queries) {
        const want = ix.match(qy);
        if (want.length > 0) nonEmpty++;
        assert.deepEqual(fresh.match(qy), want);
      }
      assert.ok(nonEmpty > queries.length / 4, `seed ${seed}: ${nonEmpty} non-empty of ${queries.length}`);
    }
  });
});

describe('workload generator', () => {
  it('is deterministic and seed-dependent', () => {
    const o = { slots: 5, ops: 500, tiers: true, sharedPrefixes: 3, maxDepth: 8 };
    assert.deepEqual(randomWorkload({ seed: 3, ...o }), randomWorkload({ seed: 3, ...o }));
    assert.notDeepEqual(randomWorkload({ seed: 3, ...o }), randomWorkload({ seed: 4, ...o }));
    const r1 = seededRng(42);
    const r2 = seededRng(42);
    for (let i = 0; i < 100; i++) assert.equal(r1.u64(), r2.u64());
  });

  it('covers every op kind and outcome, with exts distinct from locals and >= 2^63', () => {
    const ops = randomWorkload({ seed: 1, slots: 6, ops: 6000, tiers: true, sharedPrefixes: 4, maxDepth: 12 });
    assert.equal(ops.length, 6000);
    const ix = new ReferenceIndex();
    const kinds = new Map<string, number>();
    const statuses = new Set<number>();
    let partial = 0, cascades = 0, unknownRemoves = 0, tierRoot = 0, tierStores = 0, nonEmptyMatches = 0, tierHits = 0;
    const exts = new Set<bigint>();
    const locals = new Set<bigint>();
    for (const o of ops) {
      const key = o.op === 'clear' ? `clear:${o.tier}` : o.op;
      kinds.set(key, (kinds.get(key) ?? 0) + 1);
      if (o.op === 'store') {
        for (const x of o.blocks) { exts.add(x.ext); locals.add(x.local); }
        if (o.tier !== D) { tierStores++; if (o.parent === null) tierRoot++; }
      }
      const devSize = (): number => [0, 1, 2, 3, 4, 5].reduce((n, s) => n + ix.treeSize(s, D), 0);
      const before = o.op === 'remove' ? devSize() : 0;
      const r = applyOp(ix, o);
      if (o.op === 'store') {
        statuses.add(Math.min(1, r as number));
        if ((r as number) >= 0 && (r as number) < o.blocks.length) partial++;
      }
      if (o.op === 'remove') {
        if ((r as number) < o.exts.length) unknownRemoves++;
        const after = devSize();
        if (o.tier === D && before - after > (r as number)) cascades++;
      }
      if (o.op === 'match') {
        const rows = r as MatchRow[];
        if (rows.length > 0) nonEmptyMatches++;
        if (rows.some((x) => x.hostExt + x.diskExt + x.externalExt > 0)) tierHits++;
      }
    }
    for (const k of ['store', 'remove', 'match', 'removeSlot', 'clear:-1', 'clear:0']) assert.ok((kinds.get(k) ?? 0) > 0, k);
    assert.deepEqual([...statuses].sort(), [-1, -2, 0, 1].sort(), 'PARENT_NOT_FOUND, INVALID_SEQUENCE, 0 and >0 stores');
    assert.ok(partial > 10, `partial stores ${partial}`);
    assert.ok(cascades > 5, `cascading removes ${cascades}`);
    assert.ok(unknownRemoves > 10, `removes with unknown exts ${unknownRemoves}`);
    assert.ok(tierStores > 200 && tierRoot > 20, `tier stores ${tierStores}, root ${tierRoot}`);
    assert.ok(nonEmptyMatches > 500 && tierHits > 50, `matches ${nonEmptyMatches}, with tier hits ${tierHits}`);
    for (const x of exts) assert.ok(!locals.has(x), 'ext equal to a local');
    assert.ok([...exts].some((x) => x >= 1n << 63n) && [...locals].some((x) => x >= 1n << 63n));
  });
});

describe('mooncake helpers', () => {
  it('hashIdToU64 is a stable 64-bit mixing, distinct from the ext hash', () => {
    assert.equal(hashIdToU64(46, 0), hashIdToU64(46, 0));
    assert.notEqual(hashIdToU64(46, 0), hashIdToU64(46, 1));
    assert.notEqual(hashIdToU64(46, 0), hashIdToU64(47, 0));
    const seen = new Set<bigint>();
    for (let id = 0; id < 2000; id++) {
      for (let sub = 0; sub < 4; sub++) {
        const l = hashIdToU64(id, sub);
        const x = hashIdToExt(id, sub);
        assert.ok(l >= 0n && l < 1n << 64n && x >= 0n && x < 1n << 64n);
        assert.notEqual(l, x);
        seen.add(l);
        seen.add(x);
      }
    }
    assert.equal(seen.size, 16000);
  });

  it('parses trace lines and expands sub-blocks at smaller block sizes', () => {
    const text = '{"timestamp": 5, "input_length": 1000, "output_length": 7, "hash_ids": [0, 1]}\n\n' +
      '{"timestamp": 9, "input_length": 600, "output_length": 3, "hash_ids": [0, 2]}\n';
    const r512 = parseMooncake(text);
    assert.equal(r512.length, 2);
    assert.deepEqual({ t: r512[0].timestamp, i: r512[0].inputLength, o: r512[0].outputLength, h: r512[0].hashIds }, { t: 5, i: 1000, o: 7, h: [0, 1] });
    assert.deepEqual(r512[1].locals, [hashIdToU64(0, 0), hashIdToU64(2, 0)]);
    assert.deepEqual(r512[1].blocks.map((x) => x.ext), [hashIdToExt(0, 0), hashIdToExt(2, 0)]);
    const r128 = parseMooncake(text, { blockSize: 128, limit: 1 });
    assert.equal(r128.length, 1);
    assert.deepEqual(r128[0].locals, [0, 1, 2, 3].map((s) => hashIdToU64(0, s)).concat([0, 1, 2, 3].map((s) => hashIdToU64(1, s))));
    assert.throws(() => parseMooncake(text, { blockSize: 100 }), RangeError);
  });

  it('replay stores only the missing suffix and evicts leaf-first without cascades', () => {
    const lines = [[0, 1, 2], [0, 1, 3], [0, 1, 2, 4], [0, 5], [0, 1, 2, 4, 6], [7]]
      .map((h) => JSON.stringify({ timestamp: 0, input_length: 512 * h.length, output_length: 1, hash_ids: h }));
    const reqs = parseMooncake(lines.join('\n'));
    const ix = new ReferenceIndex();
    const seen: MatchRow[][] = [];
    const stats = replayMooncake(ix, reqs, { workers: 2, capacityBlocks: 4, onMatch: (rows) => seen.push(rows) });
    // worker 0 gets requests 0, 2, 4; worker 1 gets 1, 3, 5
    assert.deepEqual(seen[0], []);
    assert.deepEqual(seen[1], [{ slot: 0, device: 2, hostExt: 0, diskExt: 0, externalExt: 0 }]);
    assert.deepEqual(seen[2].map((x) => [x.slot, x.device]), [[0, 3], [1, 2]]);
    assert.deepEqual(seen[3].map((x) => [x.slot, x.device]), [[0, 1], [1, 1]]);
    assert.deepEqual(seen[4].map((x) => [x.slot, x.device]), [[0, 4], [1, 2]]);
    assert.deepEqual(seen[5], []);
    assert.equal(stats.mismatches, 0);
    assert.equal(stats.storedBlocks, 3 + 3 + 1 + 1 + 1 + 1); // only missing suffixes
    // request 4 pushes w0 to 5 blocks: its own leaf (6) is the LRU entry (ties: deeper first);
    // request 5 pushes w1 to 5: block 3 (request 1's leaf) is the oldest
    assert.equal(stats.evictedBlocks, 2);
    assert.equal(ix.treeSize(0, D), 4);
    assert.equal(ix.treeSize(1, D), 4);
    assert.deepEqual(ix.match(reqs[4].locals).map((x) => [x.slot, x.device]), [[0, 4], [1, 2]]);
    assert.deepEqual(ix.match(reqs[1].locals).map((x) => [x.slot, x.device]), [[0, 2], [1, 2]]);
    assert.deepEqual(ix.match(reqs[5].locals).map((x) => [x.slot, x.device]), [[1, 1]]);
    assert.deepEqual(stats, { requests: 6, blocks: 18, bestMatchedBlocks: 0 + 2 + 3 + 1 + 4 + 0, targetMatchedBlocks: 0 + 0 + 3 + 1 + 4 + 0, storedBlocks: 10, evictedBlocks: 2, mismatches: 0 });
    assert.equal(replayMooncake(new ReferenceIndex(), reqs, { workers: 2, capacityBlocks: 4 }).storedBlocks, stats.storedBlocks);
  });
});

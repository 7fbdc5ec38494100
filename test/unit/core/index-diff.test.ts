/**
 * Differential tests: the wasm prefix index (src/core/index/wasm-index.ts) against the reference
 * model on seeded random workloads and a Mooncake trace replay. The "reference vs reference" and
 * "harness" cases check the harness
 * itself (determinism, dump round trip, and that it does catch a deviating implementation).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tier } from '../../../src/core/index/index-types.js';
import type { Holding, MatchRow, PrefixIndexModel } from '../../../src/core/index/index-types.js';
import { ReferenceIndex } from '../../reference/index-model.js';
import { applyOp, randomWorkload } from '../../reference/workload.js';
import type { Op, WorkloadOptions } from '../../reference/workload.js';
import { parseMooncake, replayMooncake } from '../../reference/mooncake.js';
import type { MooncakeRequest } from '../../reference/mooncake.js';
import { TeeIndex, release, runDifferential } from './differential.js';
import { WasmPrefixIndex } from '../../../src/core/index/wasm-index.js';

// ---- the implementation under test -------------------------------------------------------

/** `() => new WasmPrefixIndex()` (async so the harness self-test can swap in broken indexes). */
function wasmFactory(): Promise<() => PrefixIndexModel> {
  return Promise.resolve(() => new WasmPrefixIndex());
}

const makeRef = (): PrefixIndexModel => new ReferenceIndex();

// ---- workloads ----------------------------------------------------------------------------

interface Case { name: string; opts: WorkloadOptions }

const CASES: Case[] = [];
for (let seed = 1; seed <= 30; seed++) {
  const slots = seed <= 2 ? seed : 1 + ((seed * 17) % 40); // 1..40
  const opts: WorkloadOptions = {
    seed, slots, ops: 3000 + ((seed * 331) % 3000), tiers: seed % 3 !== 0,
    sharedPrefixes: 1 + (seed % 6), maxDepth: 6 + ((seed * 5) % 20),
  };
  CASES.push({ name: `seed ${seed}, ${slots} slots, ${opts.ops} ops${opts.tiers ? ', tiers' : ''}`, opts });
}
for (const [seed, slots, ops, tiers] of [[101, 200, 2500, true], [102, 200, 2500, false], [103, 2000, 2000, true], [104, 2000, 2000, false]] as const) {
  CASES.push({
    name: `seed ${seed}, ${slots} slots, ${ops} ops${tiers ? ', tiers' : ''}`,
    opts: { seed, slots, ops, tiers, sharedPrefixes: 8, maxDepth: 16, hotSlotBias: 0.2 },
  });
}

// Wide nodes: a root with hundreds of children (child arrays growing and shrinking) and blocks
// held by hundreds of slots (holder sets switching between their linear and hashed forms).
CASES.push({
  name: 'seed 105, 400 slots, 4000 ops, 160 root chains',
  opts: { seed: 105, slots: 400, ops: 4000, tiers: false, sharedPrefixes: 160, maxDepth: 5, branches: 40, hotSlotBias: 0.05 },
});

const opsCache = new Map<number, Op[]>();
function opsOf(c: Case): Op[] {
  let ops = opsCache.get(c.opts.seed);
  if (ops === undefined) {
    ops = randomWorkload(c.opts);
    opsCache.set(c.opts.seed, ops);
  }
  return ops;
}

const MOONCAKE_PATH = join(process.cwd(), 'test/fixtures/mooncake/conversation_trace.jsonl');
const MOONCAKE_REQUESTS = 2000;
let mooncake: MooncakeRequest[] | undefined;
function mooncakeRequests(): MooncakeRequest[] {
  mooncake ??= parseMooncake(readFileSync(MOONCAKE_PATH, 'utf8'), { limit: MOONCAKE_REQUESTS });
  return mooncake;
}

/** Replay the Mooncake prefix through a TeeIndex(a, b): every answer compared as it happens. */
function mooncakeDifferential(a: PrefixIndexModel, b: PrefixIndexModel): void {
  const reqs = mooncakeRequests();
  assert.equal(reqs.length, MOONCAKE_REQUESTS);
  const tee = new TeeIndex(a, b, 'mooncake replay');
  let rowsSeen = 0;
  const stats = replayMooncake(tee, reqs, {
    workers: 16, capacityBlocks: 2048, onMatch: (rows: MatchRow[]) => { rowsSeen += rows.length; },
  });
  assert.equal(stats.mismatches, 0, 'store/remove answers match the driver bookkeeping');
  assert.equal(stats.requests, MOONCAKE_REQUESTS);
  assert.ok(stats.evictedBlocks > 0, 'capacity reached: evictions happened');
  assert.ok(stats.bestMatchedBlocks > stats.blocks / 20, `prefix reuse seen (${stats.bestMatchedBlocks} of ${stats.blocks})`);
  assert.ok(rowsSeen > MOONCAKE_REQUESTS, 'rows were compared');
  for (let w = 0; w < 16; w++) {
    const size = tee.treeSize(w, Tier.Device);
    assert.ok(size <= 2048, `worker ${w} holds ${size}`);
  }
  tee.dumpHoldings();
}

// ---- tests --------------------------------------------------------------------------------

describe('wasm vs reference', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const makeWasm = await wasmFactory();
      runDifferential(makeRef, makeWasm, opsOf(c), { label: `wasm ${c.name}` });
    });
  }
  it(`mooncake replay: first ${MOONCAKE_REQUESTS} requests, 16 workers, capacity 2048 blocks`, async () => {
    const makeWasm = await wasmFactory();
    const wasm = makeWasm();
    try {
      mooncakeDifferential(makeRef(), wasm);
    } finally {
      release(wasm);
    }
  });
});

describe('wasm orphan count (the fast match walk applies at 0) against the reference', () => {
  // A holding is an orphan when its slot does not hold the block's parent; the wasm index keeps
  // the count incrementally (stores, removes, cascades, clears) and must agree after every op.
  for (const c of CASES.filter((x) => [3, 4, 7, 101, 105].includes(x.opts.seed))) {
    it(c.name, () => {
      const ref = new ReferenceIndex(), wasm = new WasmPrefixIndex();
      let closedMatches = 0;
      try {
        for (const [i, o] of opsOf(c).entries()) {
          applyOp(ref, o);
          applyOp(wasm, o);
          assert.equal(wasm.orphanCount(), ref.orphanCount(), `after op ${i} (${o.op})`);
          if (o.op === 'match' && ref.orphanCount() === 0) closedMatches++;
        }
      } finally {
        wasm.destroy();
      }
      assert.ok(closedMatches > 0, 'some matches ran the fast walk');
    });
  }
});

describe('reference vs reference (harness self-check)', () => {
  // A sample of the workloads: the full set runs against wasm above.
  for (const c of CASES.filter((_, i) => i % 4 === 0 || i >= 30)) {
    it(c.name, () => {
      const stats = runDifferential(makeRef, makeRef, opsOf(c), { label: `ref ${c.name}` });
      assert.ok((stats.storeStatus.get(-1) ?? 0) > 0 && (stats.storeStatus.get(-2) ?? 0) > 0, 'error statuses exercised');
      assert.ok(stats.matchRows > 0 && stats.holdings > 0);
    });
  }
  it('mooncake replay', () => {
    mooncakeDifferential(makeRef(), makeRef());
  });
});

describe('harness catches deviations', () => {
  const ops = randomWorkload({ seed: 77, slots: 6, ops: 3000, tiers: true, sharedPrefixes: 3, maxDepth: 12 });

  /** Mutants of the reference model, each wrong in one observable way. */
  const mutants: Record<string, () => PrefixIndexModel> = {
    'match loses a tier hit': () => new (class extends ReferenceIndex {
      override match(locals: readonly bigint[]): MatchRow[] {
        return super.match(locals).map((r) => (r.diskExt > 0 ? { ...r, diskExt: r.diskExt - 1 } : r));
      }
    })(),
    'remove counts unknown exts': () => new (class extends ReferenceIndex {
      override remove(slot: number, tier: Tier, exts: readonly bigint[]): number {
        super.remove(slot, tier, exts);
        return exts.length;
      }
    })(),
    'clear ignores the external tier': () => new (class extends ReferenceIndex {
      override clear(slot: number, tier: Tier | -1): void {
        if (tier === -1) for (const t of [Tier.Device, Tier.Host, Tier.Disk]) super.clear(slot, t);
        else if (tier !== Tier.External) super.clear(slot, tier);
      }
      override removeSlot(slot: number): void { this.clear(slot, -1); }
    })(),
    'dump drops the deepest device holding': () => new (class extends ReferenceIndex {
      override dumpHoldings(): Holding[] {
        const h = super.dumpHoldings();
        let i = h.length - 1;
        while (i >= 0 && h[i].tier !== Tier.Device) i--;
        return i < 0 ? h : [...h.slice(0, i), ...h.slice(i + 1)];
      }
    })(),
    'treeSize off by one on disk': () => new (class extends ReferenceIndex {
      override treeSize(slot: number, tier: Tier): number {
        const n = super.treeSize(slot, tier);
        return tier === Tier.Disk && n > 0 ? n + 1 : n;
      }
    })(),
  };
  for (const [name, make] of Object.entries(mutants)) {
    it(name, () => {
      assert.throws(() => runDifferential(makeRef, make, ops), assert.AssertionError);
    });
  }
});

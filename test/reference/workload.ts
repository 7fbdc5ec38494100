/**
 * Seeded random workloads for the prefix index: a realistic but adversarial stream of
 * store / remove / clear / removeSlot / match operations, used by the differential tests.
 *
 * The generator keeps a "universe" of prefix chains (a tree of paths sharing prefixes, with
 * branching) and a shadow {@link ReferenceIndex} so most operations are meaningful (parents the
 * slot holds, removes of held blocks), mixed with invalid and conflicting ones. Deterministic:
 * the same options always give the same ops. No `node:` imports.
 */
import { Tier } from '../../src/core/index/index-types.js';
import type { BlockRef, MatchRow, PrefixIndexModel } from '../../src/core/index/index-types.js';
import { ReferenceIndex } from './index-model.js';
import { seededRng } from '../../src/core/random.js';

/** One operation on a {@link PrefixIndexModel}. */
export type Op =
  | { op: 'store'; slot: number; tier: Tier; parent: bigint | null; blocks: BlockRef[] }
  | { op: 'remove'; slot: number; tier: Tier; exts: bigint[] }
  | { op: 'clear'; slot: number; tier: Tier | -1 }
  | { op: 'removeSlot'; slot: number }
  | { op: 'match'; locals: bigint[] };

/** What {@link applyOp} returns: store/remove counts, match rows, or nothing. */
export type OpResult = number | MatchRow[] | undefined;

/** Apply one op to an index and return the index's answer. */
export function applyOp(index: PrefixIndexModel, o: Op): OpResult {
  switch (o.op) {
    case 'store': return index.store(o.slot, o.tier, o.parent, o.blocks);
    case 'remove': return index.remove(o.slot, o.tier, o.exts);
    case 'clear': index.clear(o.slot, o.tier); return undefined;
    case 'removeSlot': index.removeSlot(o.slot); return undefined;
    case 'match': return index.match(o.locals);
  }
}

const M64 = 0xffffffffffffffffn;

/** The murmur3 fmix64 finalizer: a second, unrelated 64-bit mixing (used for engine hashes). */
export function fmix64(x: bigint): bigint {
  let k = x & M64;
  k = ((k ^ (k >> 33n)) * 0xff51afd7ed558ccdn) & M64;
  k = ((k ^ (k >> 33n)) * 0xc4ceb9fe1a85ec53n) & M64;
  return k ^ (k >> 33n);
}

/** Options of {@link randomWorkload}. */
export interface WorkloadOptions {
  seed: number;
  /** Slots are 0..slots-1. */
  slots: number;
  /** Number of ops to generate. */
  ops: number;
  /** Include host/disk/external tier operations. */
  tiers: boolean;
  /** Number of independent root chains in the universe (e.g. system prompts). */
  sharedPrefixes: number;
  /** Maximum chain depth. */
  maxDepth: number;
  /** Extra branches grown off existing paths up front (default 4 * sharedPrefixes). */
  branches?: number;
  /** Probability that an op targets one of the few hot slots (default 0.4). */
  hotSlotBias?: number;
}

/** A path of the universe = one tree position; its engine ext depends on (path, version). */
interface Path { id: number; parent: number; depth: number; local: bigint; children: number[]; exts: bigint[] }

/**
 * Generate `opts.ops` operations. Ext hashes come from `fmix64` of (seed, path, version) and
 * locals from the PRNG, so the two identities never coincide by accident; both span all of u64.
 */
export function randomWorkload(opts: WorkloadOptions): Op[] {
  const gen = seededRng(opts.seed);
  const rng = gen.next;
  const int = (n: number): number => Math.floor(rng() * n);
  const pick = <T>(a: readonly T[]): T => a[int(a.length)];
  const chance = (p: number): boolean => rng() < p;
  const slots = Math.max(1, opts.slots);
  const maxDepth = Math.max(1, opts.maxDepth);
  const hot = Math.min(slots, 4);
  const hotBias = opts.hotSlotBias ?? 0.4;
  const salt = BigInt(opts.seed >>> 0) << 40n;
  const commonLocals = Array.from({ length: 6 }, () => gen.u64());
  const paths: Path[] = [];
  const rootChildren: number[] = [];
  const extToPath = new Map<bigint, number>();
  const shadow = new ReferenceIndex();
  const out: Op[] = [];

  const extOf = (pid: number, v: number): bigint => {
    const p = paths[pid];
    while (p.exts.length <= v) {
      const e = fmix64(salt ^ (BigInt(pid) << 3n) ^ BigInt(p.exts.length) ^ 0x5bd1e9955bd1e995n);
      p.exts.push(e);
      extToPath.set(e, pid);
    }
    return p.exts[v];
  };
  const addPath = (parent: number): number => {
    const id = paths.length;
    const depth = parent < 0 ? 1 : paths[parent].depth + 1;
    const local = chance(0.05) ? pick(commonLocals) : gen.u64();
    paths.push({ id, parent, depth, local, children: [], exts: [] });
    (parent < 0 ? rootChildren : paths[parent].children).push(id);
    extOf(id, 0);
    return id;
  };
  const grow = (from: number, len: number): number => {
    let p = from;
    for (let i = 0; i < len && (p < 0 || paths[p].depth < maxDepth); i++) p = addPath(p);
    return p;
  };
  for (let i = 0; i < Math.max(1, opts.sharedPrefixes); i++) grow(-1, 1 + int(maxDepth));
  for (let i = 0; i < (opts.branches ?? 4 * Math.max(1, opts.sharedPrefixes)); i++) {
    const from = pick(paths).id;
    grow(from, 1 + int(Math.max(1, maxDepth - paths[from].depth)));
  }
  const chainOf = (pid: number): number[] => {
    const c: number[] = [];
    for (let p = pid; p >= 0; p = paths[p].parent) c.push(p);
    return c.reverse();
  };
  /** Walk down up to k steps from `pid` (-1 = root) through random children, growing sometimes. */
  const descend = (pid: number, k: number): number[] => {
    const c: number[] = [];
    let p = pid;
    for (let i = 0; i < k; i++) {
      const kids = p < 0 ? rootChildren : paths[p].children;
      if (p >= 0 && paths[p].depth >= maxDepth) break;
      p = kids.length === 0 || chance(0.05) ? addPath(p) : pick(kids);
      c.push(p);
    }
    return c;
  };
  const blocksOf = (chain: readonly number[], v = 0): BlockRef[] =>
    chain.map((p) => ({ ext: extOf(p, v), local: paths[p].local }));
  const slotOf = (): number => (chance(hotBias) ? int(hot) : int(slots));
  const lowerTier = (): Tier => pick([Tier.Host, Tier.Host, Tier.Disk, Tier.External]);
  /** Device, or (with tiers enabled, with probability p) a lower tier. */
  const someTier = (p: number): Tier => (opts.tiers && chance(p) ? lowerTier() : Tier.Device);
  const emit = (o: Op): void => {
    if (o.op !== 'match') applyOp(shadow, o);
    out.push(o);
  };
  /** The ext `slot` holds at path `pid` in `tier` (tries versions), or undefined. */
  const heldAt = (held: ReadonlySet<bigint>, pid: number): bigint | undefined => {
    for (let v = 0; v < 4; v++) {
      const e = extOf(pid, v);
      if (held.has(e)) return e;
    }
    return undefined;
  };
  const garbageExts = (): bigint[] => Array.from({ length: 1 + int(3) }, () => gen.u64());

  while (out.length < opts.ops) {
    const slot = slotOf();
    const r = rng() * (opts.tiers ? 130 : 100);
    const heldList = shadow.heldExts(slot, Tier.Device);
    const heldExt = heldList.length > 0 ? pick(heldList) : undefined;
    const heldPid = heldExt === undefined ? undefined : extToPath.get(heldExt);
    if (r < 14) { // store from the root: a prefix of a chain (sometimes a brand-new branch)
      const chain = chance(0.1) ? chainOf(grow(pick(paths).id, 1 + int(4))) : chainOf(pick(paths).id);
      emit({ op: 'store', slot, tier: Tier.Device, parent: null, blocks: blocksOf(chain.slice(0, 1 + int(chain.length))) });
    } else if (r < 32) { // continuation from a block the slot holds
      if (heldExt === undefined || heldPid === undefined) continue;
      emit({ op: 'store', slot, tier: Tier.Device, parent: heldExt, blocks: blocksOf(descend(heldPid, 1 + int(6))) });
    } else if (r < 34) { // continuation from a parent the slot does not hold
      const pid = pick(paths).id;
      const parent = chance(0.5) ? gen.u64() : extOf(pid, int(3));
      if (shadow.heldExts(slot, Tier.Device).includes(parent)) continue;
      emit({ op: 'store', slot, tier: Tier.Device, parent, blocks: blocksOf(descend(pid, 1 + int(3))) });
    } else if (r < 35) { // invalid: duplicate ext in one store
      const blocks = blocksOf(chainOf(pick(paths).id));
      blocks.push({ ext: pick(blocks).ext, local: gen.u64() });
      emit({ op: 'store', slot, tier: someTier(0.3), parent: null, blocks });
    } else if (r < 36) { // invalid: a block's ext equals the parent
      if (heldExt === undefined || heldPid === undefined) continue;
      const blocks = blocksOf(descend(heldPid, 1 + int(3)));
      blocks[int(blocks.length)] = { ext: heldExt, local: gen.u64() };
      emit({ op: 'store', slot, tier: someTier(0.3), parent: heldExt, blocks });
    } else if (r < 39) { // re-key: store a held node again under a new ext version
      if (heldPid === undefined) continue;
      const chain = chainOf(heldPid);
      const blocks = blocksOf(chain);
      blocks[blocks.length - 1] = { ext: extOf(heldPid, 1 + int(3)), local: paths[heldPid].local };
      if (chance(0.3)) for (let i = 0; i < blocks.length - 1; i++) blocks[i] = { ext: extOf(chain[i], int(4)), local: blocks[i].local };
      emit({ op: 'store', slot, tier: Tier.Device, parent: null, blocks });
    } else if (r < 41) { // ext conflict: reuse an ext the slot already holds elsewhere
      if (heldExt === undefined) continue;
      const blocks = blocksOf(chainOf(pick(paths).id));
      const at = int(blocks.length);
      blocks[at] = { ext: heldExt, local: blocks[at].local };
      if (new Set(blocks.map((b) => b.ext)).size !== blocks.length) continue;
      emit({ op: 'store', slot, tier: Tier.Device, parent: null, blocks });
    } else if (r < 51) { // remove leaf-first: a held block and some of its ancestors
      if (heldPid === undefined || heldExt === undefined) continue;
      const held = new Set(heldList);
      const exts = [heldExt];
      for (let p = paths[heldPid].parent, k = int(4); p >= 0 && k > 0; p = paths[p].parent, k--) {
        const e = heldAt(held, p);
        if (e !== undefined) exts.push(e);
      }
      if (chance(0.15)) exts.push(...garbageExts());
      if (chance(0.1)) exts.push(exts[0]); // duplicate within one remove: second is unknown
      emit({ op: 'remove', slot, tier: Tier.Device, exts });
    } else if (r < 55) { // remove a middle block (cascades when it was the last holder)
      const mids = heldList.filter((e) => { const p = extToPath.get(e); return p !== undefined && paths[p].children.length > 0; });
      if (mids.length === 0) continue;
      emit({ op: 'remove', slot, tier: Tier.Device, exts: [pick(mids)] });
    } else if (r < 57) { // remove unknown exts
      const exts = chance(0.5) ? garbageExts() : [extOf(pick(paths).id, int(4))];
      emit({ op: 'remove', slot, tier: someTier(0.3), exts });
    } else if (r < 57.4) {
      emit({ op: 'clear', slot, tier: someTier(0.5) });
    } else if (r < 57.6) {
      emit({ op: 'clear', slot, tier: -1 });
    } else if (r < 57.8) {
      emit({ op: 'removeSlot', slot });
    } else if (r < 59) { // more plain root stores (keeps the index populated)
      emit({ op: 'store', slot, tier: Tier.Device, parent: null, blocks: blocksOf(chainOf(pick(paths).id)) });
    } else if (r < 60) { // empty stores
      emit({ op: 'store', slot, tier: someTier(0.3), parent: chance(0.5) ? null : (heldExt ?? gen.u64()), blocks: [] });
    } else if (r < 100) { // match: a prefix of a chain, sometimes extended, mutated or garbage
      const q = rng();
      let locals: bigint[];
      if (q < 0.04) locals = [];
      else if (q < 0.1) locals = Array.from({ length: 1 + int(maxDepth) }, () => gen.u64());
      else {
        const chain = chainOf(heldPid !== undefined && chance(0.5) ? heldPid : pick(paths).id);
        const ids = chance(0.3) ? chain : chain.slice(0, 1 + int(chain.length));
        if (chance(0.3)) ids.push(...descend(ids[ids.length - 1], 1 + int(4)));
        locals = ids.map((p) => paths[p].local);
        if (chance(0.1)) locals[int(locals.length)] = gen.u64();
        if (chance(0.15)) locals.push(...Array.from({ length: 1 + int(3) }, () => gen.u64()));
      }
      emit({ op: 'match', locals });
    } else { // lower tiers (only with opts.tiers)
      const tier = lowerTier();
      const tHeld = shadow.heldExts(slot, tier);
      const s = r - 100;
      if (s < 9) { // offload copies: continue from a device ext (sometimes from an ancestor of it)
        if (heldPid === undefined || heldExt === undefined) continue;
        let pid = heldPid;
        let parent: bigint = heldExt;
        const up = int(3);
        const held = new Set(heldList);
        for (let i = 0; i < up && paths[pid].parent >= 0; i++) {
          const e = heldAt(held, paths[pid].parent);
          if (e === undefined) break;
          pid = paths[pid].parent;
          parent = e;
        }
        const chain = chance(0.5) ? descend(pid, 1 + int(6)) : chainOf(heldPid).slice(paths[pid].depth);
        if (chain.length === 0) chain.push(...descend(pid, 1 + int(3)));
        emit({ op: 'store', slot, tier, parent, blocks: blocksOf(chain) });
      } else if (s < 13) { // tier root stores
        const chain = chainOf(pick(paths).id);
        emit({ op: 'store', slot, tier, parent: null, blocks: blocksOf(chain.slice(0, 1 + int(chain.length))) });
      } else if (s < 18) { // continue after an earlier tier's block (disk after host, ...)
        const from = tier === Tier.Host ? Tier.Device : pick([Tier.Host, Tier.Host, Tier.Disk]);
        const list = shadow.heldExts(slot, from);
        if (list.length === 0) continue;
        const parent = pick(list);
        const pid = extToPath.get(parent);
        if (pid === undefined) continue;
        emit({ op: 'store', slot, tier, parent, blocks: blocksOf(descend(pid, 1 + int(5))) });
      } else if (s < 21) { // conflicts: other ext versions (existing mapping wins) or a reused ext
        const chain = chainOf(pick(paths).id);
        const blocks = blocksOf(chain, 1 + int(2));
        if (tHeld.length > 0 && chance(0.5)) blocks[int(blocks.length)] = { ext: pick(tHeld), local: gen.u64() };
        if (new Set(blocks.map((b) => b.ext)).size !== blocks.length) continue;
        emit({ op: 'store', slot, tier, parent: chance(0.3) ? gen.u64() : null, blocks });
      } else if (s < 29.5) { // tier removes of held edges (+ unknown)
        if (tHeld.length === 0) continue;
        const exts = Array.from({ length: 1 + int(4) }, () => pick(tHeld));
        if (chance(0.2)) exts.push(...garbageExts());
        emit({ op: 'remove', slot, tier, exts });
      } else {
        emit({ op: 'clear', slot, tier: chance(0.3) ? -1 : tier });
      }
    }
  }
  return out;
}

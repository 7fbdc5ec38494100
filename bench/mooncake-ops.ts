/**
 * The indexer benchmark workload (issue: foundation §6), precomputed as an op stream so the
 * timed replay measures the index alone: Mooncake conversation trace, one block per hash_id
 * (block size 512, comparable with Dynamo's published figures); each request is matched, then
 * stored on worker `i % W` (only the suffix the worker does not hold, parent = its deepest held
 * block); each worker holds at most `capacity` blocks and evicts least-recently-used blocks
 * with Removed events (a request touches its whole chain, so parents are never older than
 * children and evictions go leaf-first).
 */
import { readFileSync } from 'node:fs';

export interface OpStream {
  kind: Uint8Array;          // 0 = match, 1 = store, 2 = remove
  slot: Int32Array;
  start: Int32Array;         // offset into `locals`/`exts`
  len: Int32Array;
  hasParent: Uint8Array;
  parent: BigUint64Array;
  locals: BigUint64Array;    // match queries and stored blocks' local hashes
  exts: BigUint64Array;      // stored / removed engine hashes
  count: number;
  blocks: { matched: number; stored: number; removed: number };
}

/** splitmix64 finaliser: a fixed 64-bit mixing of a 64-bit input. */
export function mix64(x: bigint): bigint {
  let z = BigInt.asUintN(64, x + 0x9e3779b97f4a7c15n);
  z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
  z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
  return z ^ (z >> 31n);
}

/** A bench option given as `--name=value` or `--name value`, else undefined. */
export function option(argv: readonly string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith(`--${name}=`)) return argv[i].slice(name.length + 3);
    if (argv[i] === `--${name}`) return argv[i + 1];
  }
  return undefined;
}

export function readTrace(path: string, limit = Infinity): number[][] {
  const out: number[][] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    out.push((JSON.parse(line) as { hash_ids: number[] }).hash_ids);
    if (out.length >= limit) break;
  }
  return out;
}

/** Build the op stream for W workers. Chains are root-aligned lists of hash ids. */
export function buildOps(chains: number[][], workers: number, capacity: number): OpStream {
  const kind: number[] = [], slot: number[] = [], start: number[] = [], len: number[] = [], hasParent: number[] = [];
  const parent: bigint[] = [], locals: bigint[] = [], exts: bigint[] = [];
  const localOf = new Map<number, bigint>(), extOf = new Map<number, bigint>();
  const L = (id: number): bigint => { let v = localOf.get(id); if (v === undefined) { v = mix64(BigInt(id)); localOf.set(id, v); } return v; };
  const E = (id: number): bigint => { let v = extOf.get(id); if (v === undefined) { v = mix64(BigInt(id) ^ 0x5bd1e995abcdefn); extOf.set(id, v); } return v; };
  // Per worker: held block key "depth:id" (hash ids are position-unique chains) -> last use tick.
  const held: Map<string, { tick: number; depth: number; id: number }>[] = Array.from({ length: workers }, () => new Map());
  const blocks = { matched: 0, stored: 0, removed: 0 };
  let tick = 0;
  chains.forEach((chain, r) => {
    kind.push(0); slot.push(0); start.push(locals.length); len.push(chain.length); hasParent.push(0); parent.push(0n);
    for (const id of chain) { locals.push(L(id)); exts.push(0n); }
    blocks.matched += chain.length;
    const w = r % workers;
    const h = held[w];
    let k = 0;
    while (k < chain.length && h.has(`${k}:${chain[k]}`)) k++;
    tick++;
    for (let d = 0; d < chain.length; d++) {
      const key = `${d}:${chain[d]}`;
      const e = h.get(key);
      if (e) e.tick = tick; else h.set(key, { tick, depth: d, id: chain[d] });
    }
    if (k < chain.length) {
      kind.push(1); slot.push(w); start.push(locals.length); len.push(chain.length - k);
      hasParent.push(k > 0 ? 1 : 0); parent.push(k > 0 ? E(chain[k - 1]) : 0n);
      for (let d = k; d < chain.length; d++) { locals.push(L(chain[d])); exts.push(E(chain[d])); }
      blocks.stored += chain.length - k;
    }
    if (h.size > capacity) {
      const victims = [...h.entries()].sort((a, b) => a[1].tick - b[1].tick || b[1].depth - a[1].depth).slice(0, h.size - capacity);
      kind.push(2); slot.push(w); start.push(locals.length); len.push(victims.length); hasParent.push(0); parent.push(0n);
      for (const [key, v] of victims) { h.delete(key); locals.push(0n); exts.push(E(v.id)); }
      blocks.removed += victims.length;
    }
  });
  return {
    kind: Uint8Array.from(kind), slot: Int32Array.from(slot), start: Int32Array.from(start), len: Int32Array.from(len),
    hasParent: Uint8Array.from(hasParent), parent: BigUint64Array.from(parent), locals: BigUint64Array.from(locals),
    exts: BigUint64Array.from(exts), count: kind.length, blocks,
  };
}

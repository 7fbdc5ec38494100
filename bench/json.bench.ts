/**
 * u64-exact JSON vs native JSON on representative HTTP bodies.
 *
 *   npx tsc -p tsconfig.json && node build/dist/bench/json.bench.js
 *
 * Each row compares one of our functions against the native one on the same
 * body (natively parsed hashes are lossy doubles, so for (b) the native column
 * is the speed we give up for exactness). ops/s is 1000 / median latency.
 */
import { Bench, type Task } from 'tinybench';
import { jsonU64, parseJson, parseJsonPrecise, stringifyJson, u64ToI64 } from '../src/http/json.js';
import { makeRng } from '../src/core/reference/workload.js';

/** Seeded PRNG (mulberry32): the project's one, so bodies are identical run to run. */
const mulberry32 = makeRng;

interface Row {
  body: string;
  op: string;
  ours: () => unknown;
  native: () => unknown;
}

function rows(): { rows: Row[]; sizes: Record<string, number> } {
  const r = mulberry32(1);
  const u64 = (): bigint => (1n << 64n) - 1n - BigInt(Math.floor(r() * 2 ** 40));

  // (a) 2,048-token request: all integers safe -> native fast path
  const tokens = { model: 'llama-3-70b', request_id: 'req-00000001', token_ids: Array.from({ length: 2048 }, () => Math.floor(r() * 128_256)) };
  const tokensText = JSON.stringify(tokens);

  // (b) 10,000 u64 hashes near 2^64 -> precise path
  const hashes = { worker_id: u64(), block_hashes: Array.from({ length: 10_000 }, u64) };
  const hashesText = stringifyJson(hashes);
  const hashesLossy = JSON.parse(hashesText) as unknown;

  // (c) ~300-byte select response with safe ids (jsonU64 keeps them numbers)
  const select = (id: bigint, seq: bigint[]) => ({
    worker_id: jsonU64(id),
    dp_rank: 0,
    overlap_blocks: 37,
    total_blocks: 64,
    prefill_tokens: 1024,
    decode_blocks: 12,
    cost: 0.41796875,
    request_id: 'req-00000001',
    router: 'kv-aware',
    lora_name: null,
    dp_size: 8,
    queue_depth: 3,
    active_blocks: 1408,
    model: 'llama-3-70b-instruct',
    seq_hashes: seq.map((h) => jsonU64(u64ToI64(h))),
  });
  const selectSmall = select(3n, [1n, 2n, 3n, 4n, 5n, 6n, 7n]);
  const selectSmallText = JSON.stringify(selectSmall);
  // (c') same response with a u64 worker id and i64 hashes -> bigint paths
  const selectU64 = select(u64(), [u64(), u64(), 1n << 63n]);
  const selectU64Text = stringifyJson(selectU64);
  const selectU64Lossy = JSON.parse(selectU64Text) as unknown;

  return {
    sizes: { a: tokensText.length, b: hashesText.length, c: selectSmallText.length, "c'": selectU64Text.length },
    rows: [
      { body: 'a', op: 'parse', ours: () => parseJson(tokensText), native: () => JSON.parse(tokensText) },
      { body: 'a', op: 'parse (precise only)', ours: () => parseJsonPrecise(tokensText), native: () => JSON.parse(tokensText) },
      { body: 'a', op: 'stringify', ours: () => stringifyJson(tokens), native: () => JSON.stringify(tokens) },
      { body: 'b', op: 'parse', ours: () => parseJson(hashesText), native: () => JSON.parse(hashesText) },
      { body: 'b', op: 'parse (precise only)', ours: () => parseJsonPrecise(hashesText), native: () => JSON.parse(hashesText) },
      { body: 'b', op: 'stringify', ours: () => stringifyJson(hashes), native: () => JSON.stringify(hashesLossy) },
      { body: 'c', op: 'parse', ours: () => parseJson(selectSmallText), native: () => JSON.parse(selectSmallText) },
      { body: 'c', op: 'stringify', ours: () => stringifyJson(selectSmall), native: () => JSON.stringify(selectSmall) },
      { body: "c'", op: 'parse', ours: () => parseJson(selectU64Text), native: () => JSON.parse(selectU64Text) },
      { body: "c'", op: 'stringify', ours: () => stringifyJson(selectU64), native: () => JSON.stringify(selectU64Lossy) },
    ],
  };
}

function opsPerSec(task: Task | undefined): number {
  const res = task?.result;
  if (!res || res.state !== 'completed') throw new Error(`benchmark ${task?.name ?? '?'} did not complete`);
  return 1000 / res.latency.p50;
}

function fmt(n: number): string {
  return n >= 1e5 ? `${(n / 1e3).toFixed(0)}k` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}

/**
 * Runs every case and prints a compact table (ops/s and ours/native ratio).
 *
 * @param time Time budget per task in ms.
 */
export async function main(time = 400): Promise<void> {
  const { rows: cases, sizes } = rows();
  const bench = new Bench({ time, warmupTime: 100 });
  for (const c of cases) {
    bench.add(`${c.body} ${c.op} ours`, c.ours);
    bench.add(`${c.body} ${c.op} native`, c.native);
  }
  await bench.run();
  console.log(
    `bodies: (a) 2,048 token_ids ${sizes.a} B, (b) 10,000 u64 hashes ${sizes.b} B, ` +
      `(c) select response ${sizes.c} B, (c') same with u64 ids ${sizes["c'"]} B`,
  );
  const header = ['body', 'op', 'ours ops/s', 'native ops/s', 'ratio'];
  const table = cases.map((c) => {
    const ours = opsPerSec(bench.getTask(`${c.body} ${c.op} ours`));
    const native = opsPerSec(bench.getTask(`${c.body} ${c.op} native`));
    return [c.body, c.op, fmt(ours), fmt(native), (ours / native).toFixed(2)];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  console.log(line(header));
  for (const row of table) console.log(line(row));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}

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
import { jsonU64, parseJson, parseJsonPrecise, stringifyJson, u64ToI64 } from '../src/core/wire/json.js';
import { seededRng } from '../src/core/random.js';

/** The project's seeded PRNG, so bodies are identical run to run. */
const seededFloats = (seed: number): (() => number) => seededRng(seed).next;

interface Row {
  body: string;
  op: string;
  ours: () => unknown;
  native: () => unknown;
}

function rows(): { rows: Row[]; sizes: Record<string, number> } {
  const r = seededFloats(1);
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

  // (d) a realistic hash-form /select_and_reserve request (Dynamo `lib/kv-router/src/services/selection/core/run.rs`): 128 blocks of 16 tokens,
  // hashes as clients send them (i64, so about half negative, most beyond 2^53)
  const i64 = (): bigint => BigInt.asIntN(64, BigInt(Math.floor(r() * 2 ** 32)) << 32n | BigInt(Math.floor(r() * 2 ** 32)));
  const selectReq = {
    selection_id: 'req-7f3c9a2e-4b1d-4e8a-9c6f-2d5b8e1a7c34', model_name: 'llama-3-70b-instruct', routing_group: 'default',
    block_hashes: Array.from({ length: 128 }, i64), sequence_hashes: Array.from({ length: 128 }, i64), isl_tokens: 2048,
    expected_output_tokens: 256, session_context: { session_id: 'session-abc', input_trigger: 'user_message' },
    router_config_override: { overlap_score_credit: 1.0 },
  };
  const selectReqText = stringifyJson(selectReq);

  // (e) the /select_and_reserve response to it (types.ts SelectResponse): a u64 worker id and 128
  // i64 sequence hashes, all bigint as the core returns them
  const reserveRes = {
    selection_id: selectReq.selection_id, sequence_hashes: selectReq.sequence_hashes, isl_tokens: 2048, track_prefill_tokens: true,
    model_name: selectReq.model_name, routing_group: 'default', worker_id: u64(), dp_rank: 1, endpoint: 'http://worker-17.pool.svc:8000',
    block_size: 16, overlap: { longest_matched: 1024, gpu: 512, dp: { 0: 256, 1: 512 }, cpu: 768, disk: 1024 },
    effective_prefill_tokens: 1280, potential_decode_blocks: 2112, decode_busy: false,
  };
  const reserveResLossy = JSON.parse(stringifyJson(reserveRes)) as unknown;

  // (f) a /select response: no hashes, but worker_id is still a bigint (3n) as the core returns it
  const selectRes = { ...reserveRes, worker_id: 3n, sequence_hashes: undefined, isl_tokens: undefined, track_prefill_tokens: undefined };
  const selectResNative = { ...selectRes, worker_id: 3 };

  return {
    sizes: {
      a: tokensText.length, b: hashesText.length, c: selectSmallText.length, "c'": selectU64Text.length, d: selectReqText.length,
      e: stringifyJson(reserveRes).length, f: stringifyJson(selectRes).length,
    },
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
      { body: 'd', op: 'parse', ours: () => parseJson(selectReqText), native: () => JSON.parse(selectReqText) },
      { body: 'e', op: 'stringify', ours: () => stringifyJson(reserveRes), native: () => JSON.stringify(reserveResLossy) },
      { body: 'f', op: 'stringify', ours: () => stringifyJson(selectRes), native: () => JSON.stringify(selectResNative) },
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
      `(c) select response ${sizes.c} B, (c') same with u64 ids ${sizes["c'"]} B, ` +
      `(d) hash-form select request, 128 blocks ${sizes.d} B, (e) its select_and_reserve response ${sizes.e} B, ` +
      `(f) select response, bigint worker id ${sizes.f} B`,
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

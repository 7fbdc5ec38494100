/**
 * One script that Node, Deno and Bun each run (test/integration/edge/runtimes.test.ts): the
 * `select-service/browser` bundle imported from two copies (two module instances, each with its
 * own wasm state; a query string would not do: Bun keys modules by path), once with the embedded
 * wasm bytes and once with `useWasmModule` given build/browser/select-service.wasm compiled by
 * the runtime, each time a selection with prefix reuse and a small simulation of two policies;
 * plus what useWasmModule answers to a wrong module, to bytes, and when it is too late. It prints
 * one JSON line. Usage: `<runtime> edge-scenario.js <project root> <bundle copy 1> <bundle copy 2>`.
 */
import { readFile } from 'node:fs/promises';
import process from 'node:process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

type Bundle = typeof import('../../src/browser.js');

/** The results a runtime must agree on (with itself both ways, and with the others). */
export interface ScenarioResult {
  /** The worker a prompt was booked on, and the worker and cached tokens of a longer prompt sharing it after prefill_complete. */
  first: { worker: string; overlap: number };
  second: { worker: string; overlap: number };
  /** A u64 worker id through the core and stringifyJson. */
  u64: string;
  /** Per policy: requests, blocks, cached blocks, hit rate, TTFT p50 (ms). */
  sim: { policy: string; requests: number; blocks: number; cached_blocks: number; hit_rate: number; ttft_p50: number }[];
}

export interface ScenarioOutput {
  runtime: string;
  /** Whether the two imports were two module instances (else "with the module" proves nothing). */
  separateInstances: boolean;
  embedded: ScenarioResult;
  module: ScenarioResult;
  /** The messages useWasmModule threw ('' if it did not throw). */
  errors: { bytes: string; mismatch: string; tooLate: string; sameModuleAgain: string };
}

/** Trace requests simulated (a few hundred ms of work per policy). */
const TRACE_REQUESTS = 150;

async function scenario(m: Bundle, traceText: string): Promise<ScenarioResult> {
  const core = m.SelectionCore.newLocal(m.parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }), { rng: m.seededRng(11) });
  for (const id of [1n, 2n, 18446744073709551615n]) core.upsertWorker({ worker_id: id, model_name: 'm', endpoint: `http://w${id}`, block_size: 4 });
  const prompt = Array.from({ length: 32 }, (_, i) => i + 1);
  const first = await core.selectAndReserve({ model_name: 'm', selection_id: 'a', token_ids: prompt });
  core.prefillComplete('a');
  const second = await core.select({ model_name: 'm', token_ids: [...prompt, 33, 34, 35, 36, 37, 38, 39, 40] });
  core.freeReservation('a');
  const u64 = m.stringifyJson({ id: core.listWorkers().map((w) => w.worker_id).sort((a, b) => (a < b ? 1 : -1))[0] });
  const r = await m.simulate(m.parseTrace(traceText, { limit: TRACE_REQUESTS }), { policies: 'kv,round_robin', fleet: { workers: 4 } });
  return {
    first: { worker: String(first.worker_id), overlap: first.overlap.longest_matched },
    second: { worker: String(second.worker_id), overlap: second.overlap.longest_matched },
    u64,
    sim: r.policies.map((p) => ({
      policy: p.policy, requests: p.requests, blocks: p.blocks, cached_blocks: p.cached_blocks, hit_rate: p.hit_rate, ttft_p50: p.ttft_ms.p50,
    })),
  };
}

function thrown(f: () => void): string {
  try { f(); return ''; } catch (err) { return err instanceof Error ? err.message : String(err); }
}

/** A valid module that is not the index: exports one function `f`. */
const OTHER_MODULE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 4, 1, 2, 0, 11,
]);

function runtimeName(): string {
  const g = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  if (g.Deno) return `deno ${g.Deno.version.deno}`;
  if (g.Bun) return `bun ${g.Bun.version}`;
  return `node ${process.versions.node}`;
}

async function main(root: string, copies: [string, string]): Promise<ScenarioOutput> {
  const traceText = await readFile(join(root, 'test/fixtures/mooncake/conversation_trace.jsonl'), 'utf8');
  const embedded = await import(pathToFileURL(copies[0]).href) as Bundle;
  const hosted = await import(pathToFileURL(copies[1]).href) as Bundle;
  const file = await readFile(join(root, 'build/browser/select-service.wasm'));
  const errors = {
    bytes: thrown(() => hosted.useWasmModule(new Uint8Array(file) as unknown as WebAssembly.Module)),
    mismatch: thrown(() => hosted.useWasmModule(new WebAssembly.Module(OTHER_MODULE))),
    tooLate: '', sameModuleAgain: '',
  };
  const module = await WebAssembly.compile(new Uint8Array(file));
  hosted.useWasmModule(module);
  const withModule = await scenario(hosted, traceText);
  errors.sameModuleAgain = thrown(() => hosted.useWasmModule(module));
  errors.tooLate = thrown(() => hosted.useWasmModule(new WebAssembly.Module(new Uint8Array(file))));
  return {
    runtime: runtimeName(), separateInstances: embedded.SelectionCore !== hosted.SelectionCore,
    embedded: await scenario(embedded, traceText), module: withModule, errors,
  };
}

const [root, copy1, copy2] = process.argv.slice(2);
if (copy2 === undefined) {
  process.stderr.write('usage: <runtime> edge-scenario.js <project root> <bundle copy 1> <bundle copy 2>\n');
  process.exit(2);
}
main(root, [copy1, copy2]).then((out) => { process.stdout.write(`${JSON.stringify(out)}\n`); }, (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});

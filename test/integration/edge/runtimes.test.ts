/**
 * The `select-service/browser` bundle in Node, Deno and Bun (the binaries from the `deno` and
 * `bun` devDependencies' npm platform packages, test/support/runtimes.ts): one process per
 * runtime runs test/support/edge-scenario.ts, which uses the bundle with the embedded wasm and,
 * in a second module instance, with `useWasmModule` given build/browser/select-service.wasm.
 * Both ways must select alike (a prefix booked and prefill-completed goes back to its worker),
 * simulate alike, and every runtime must agree with Node. A runtime that cannot be found is
 * skipped with the reason.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runProcess } from '../../support/run-process.js';
import { findBun, findDeno, type Found } from '../../support/runtimes.js';
import type { ScenarioOutput, ScenarioResult } from '../../support/edge-scenario.js';

// compiled to build/dist/test/integration/edge/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const SCRIPT = join(root, 'build/dist/test/support/edge-scenario.js');

/** Two copies of the bundle (two module instances in every runtime), in a folder of their own. */
let tmp = '';
const copies = (): string[] => [join(tmp, 'a/select-service.js'), join(tmp, 'b/select-service.js')];
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'select-service-edge-'));
  for (const c of copies()) {
    await mkdir(dirname(c));
    await copyFile(join(root, 'build/browser/select-service.js'), c);
  }
});
after(() => rm(tmp, { recursive: true, force: true }));

/** How each runtime runs the script (Deno: read access to the project and the copies only, no prompt). */
const RUNTIMES: { name: string; find(): Found; args(script: string): string[] }[] = [
  { name: 'node', find: () => ({ ok: true, path: process.execPath, version: process.version }), args: (s) => [s, root, ...copies()] },
  { name: 'deno', find: () => findDeno(root), args: (s) => ['run', `--allow-read=${root},${tmp}`, '--no-prompt', s, root, ...copies()] },
  { name: 'bun', find: () => findBun(root), args: (s) => [s, root, ...copies()] },
];

let reference: ScenarioResult | null = null;

/** What any runtime, either way, must show. */
function checkResult(r: ScenarioResult, label: string): void {
  assert.equal(r.second.worker, r.first.worker, `${label}: the shared prefix goes back to the worker that prefilled it`);
  assert.equal(r.first.overlap, 0, `${label}: nothing cached before the first booking`);
  assert.equal(r.second.overlap, 32, `${label}: the 32 tokens of the booked prompt are cached there`);
  assert.equal(r.u64, '{"id":18446744073709551615}', `${label}: u64 ids exact`);
  assert.deepEqual(r.sim.map((p) => [p.policy, p.requests]), [['kv', 150], ['round_robin', 150]], label);
  for (const p of r.sim) {
    assert.ok(p.cached_blocks > 0 && p.cached_blocks < p.blocks, `${label} ${p.policy}: some blocks hit the cache (${p.cached_blocks}/${p.blocks})`);
    assert.ok(p.ttft_p50 > 0, `${label} ${p.policy}: TTFT p50 ${p.ttft_p50}`);
  }
}

for (const rt of RUNTIMES) {
  const found = rt.find();
  test(`${rt.name}: the browser bundle with the embedded wasm and with useWasmModule`, { skip: found.ok ? false : found.reason, timeout: 120_000 }, async (t) => {
    if (!found.ok) return;
    t.diagnostic(`${found.path}: ${found.version}`);
    const env = { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1', DO_NOT_TRACK: '1' };
    const run = await runProcess(found.path, rt.args(SCRIPT), root, 100_000, env);
    assert.equal(run.code, 0, `${rt.name} failed:\n${run.stderr}`);
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as ScenarioOutput;
    assert.match(out.runtime, new RegExp(`^${rt.name} `));
    assert.equal(out.separateInstances, true, 'the two imports are two module instances');
    checkResult(out.embedded, `${rt.name} embedded`);
    checkResult(out.module, `${rt.name} useWasmModule`);
    assert.deepEqual(out.module, out.embedded, 'the same results both ways');

    // useWasmModule's errors: what is wrong and what to do
    assert.match(out.errors.bytes, /expected a compiled WebAssembly\.Module \(got Uint8Array\).*WebAssembly\.compile\(bytes\)/);
    assert.match(out.errors.mismatch, /not this version's wasm index \(missing: export .*not expected: export f function\); pass build\/browser\/select-service\.wasm/);
    assert.match(out.errors.tooLate, /too late, the wasm index is already instantiated.*before the first use/);
    assert.equal(out.errors.sameModuleAgain, '', 'the same module again is a no-op');

    // every runtime agrees with Node (which runs first)
    if (rt.name === 'node') reference = out.embedded;
    else if (reference !== null) assert.deepEqual(out.embedded, reference, `${rt.name} agrees with node`);
  });
}

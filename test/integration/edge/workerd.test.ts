/**
 * The example Cloudflare Worker (examples/cloudflare-worker) in workerd, Cloudflare's runtime,
 * through miniflare (a devDependency; workerd's binary comes in an npm platform package). The
 * Worker is bundled as wrangler bundles it (esbuild; `select-service/browser` resolves to the
 * package's own build/browser/select-service.js) and build/browser/select-service.wasm is a
 * CompiledWasm module, with the `compatibility_date` and vars of its wrangler.toml. Over HTTP:
 * the workers of the `WORKERS` var, a selection with prefix reuse after booking and
 * `prefill_complete`, a simulation of two policies on a posted Mooncake trace (equal to the same
 * simulation in Node), bad input answered with what is wrong. A second Worker that does not call
 * useWasmModule shows what a user sees then: the runtime's refusal and the remedy, in the worker
 * record's reason.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

// compiled to build/dist/test/integration/edge/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const EXAMPLE = join(root, 'examples/cloudflare-worker');
const FULL_TRACE = readFileSync(join(root, 'test/fixtures/mooncake/conversation_trace.jsonl'), 'utf8');
const TRACE = FULL_TRACE.split('\n').slice(0, 150).join('\n');

type Miniflare = import('miniflare').Miniflare;
let mf: Miniflare | null = null;
let skip: string | false = false;
try {
  await import('miniflare');
  // the workerd binary miniflare starts: the `default` export of its CommonJS package (imported
  // through a variable: the package has no types)
  const workerd = 'workerd';
  const bin = (await import(workerd) as { default: { default: string } }).default.default;
  if (!existsSync(bin)) skip = `workerd's binary is not installed at ${bin} (npm ci installs it with miniflare)`;
} catch (err) {
  skip = `miniflare or workerd's binary is not installed (npm ci installs them): ${(err as Error).message.trim().split('\n')[0]}`;
}

/**
 * The string values of wrangler.toml's top level and `[vars]` (`KEY = "..."` and `KEY = '''...'''`):
 * the few keys the example uses, read without a TOML library.
 */
function wranglerToml(text: string): { top: Record<string, string>; vars: Record<string, string>; rules: string } {
  const top: Record<string, string> = {}, vars: Record<string, string> = {};
  let table = '';
  for (const m of text.matchAll(/^\[\[?([\w.]+)\]\]?\s*$|^(\w+) = (?:"([^"]*)"|'''([\s\S]*?)''')/gm)) {
    if (m[1] !== undefined) { table = m[1]; continue; }
    if (table === '') top[m[2]] = m[3] ?? m[4];
    else if (table === 'vars') vars[m[2]] = m[3] ?? m[4];
  }
  return { top, vars, rules: text.slice(text.indexOf('[[rules]]'), text.indexOf('[vars]')) };
}

/** An entry module bundled as wrangler would (the .wasm import left for the CompiledWasm module). */
async function bundle(entry: { file: string } | { source: string }): Promise<string> {
  const input = 'file' in entry ? { entryPoints: [entry.file] } : { stdin: { contents: entry.source, resolveDir: root, sourcefile: 'inline.js' } };
  const r = await build({
    ...input, bundle: true, write: false, format: 'esm', platform: 'neutral', conditions: ['workerd', 'worker', 'browser'],
    external: ['*.wasm'], logLevel: 'error', absWorkingDir: root,
  });
  return r.outputFiles[0].text;
}

/** A Worker that never calls useWasmModule: what a user of the bundle alone meets in workerd. */
const WITHOUT_MODULE = `import { SelectionCore, parseRouterConfig, stringifyJson } from 'select-service/browser';
export default { async fetch() {
  const core = SelectionCore.newLocal(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }));
  return new Response(stringifyJson(core.upsertWorker({ worker_id: 1, model_name: 'm', endpoint: 'http://w', block_size: 4 })));
} };`;

before(async () => {
  if (skip) return;
  const { Miniflare } = await import('miniflare');
  const toml = wranglerToml(readFileSync(join(EXAMPLE, 'wrangler.toml'), 'utf8'));
  assert.match(toml.rules, /type = "CompiledWasm"[\s\S]*globs = \["\*\*\/\*\.wasm"\]/, 'wrangler.toml imports .wasm files as compiled modules');
  const main = join(EXAMPLE, toml.top.main);
  mf = new Miniflare({
    // cf: false: the fallback request.cf object, not one fetched from Cloudflare (no traffic leaves this machine)
    host: '127.0.0.1', port: 0, cf: false,
    workers: [
      {
        name: 'edge', compatibilityDate: toml.top.compatibility_date, bindings: toml.vars, modulesRoot: EXAMPLE,
        modules: [
          { type: 'ESModule', path: main, contents: await bundle({ file: main }) },
          { type: 'CompiledWasm', path: join(dirname(main), 'select-service.wasm'), contents: readFileSync(join(root, 'build/browser/select-service.wasm')) },
        ],
      },
      { name: 'no-module', compatibilityDate: toml.top.compatibility_date, modules: true, script: await bundle({ source: WITHOUT_MODULE }) },
    ],
  });
  await mf.ready;
});
after(async () => { await mf?.dispose(); });

async function call(method: string, path: string, body?: unknown, worker = 'edge'): Promise<{ status: number; body: any; text?: string }> {
  // miniflare types its Fetcher with Cloudflare's workers-types, which are not installed here
  const w = await mf!.getWorker(worker) as unknown as { fetch(url: string, init: RequestInit): Promise<Response> };
  const init = body === undefined ? { method } : { method, body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } };
  const res = await w.fetch(`http://edge.test${path}`, init);
  const text = await res.text();
  const out = { status: res.status, body: JSON.parse(text) as unknown };
  Object.defineProperty(out, 'text', { value: text }); // not enumerable: deepEqual compares status and body
  return out;
}

test('workerd: the workers of the WORKERS var, and a shared prefix goes back to the worker that prefilled it', { skip, timeout: 120_000 }, async () => {
  const ready = await call('GET', '/ready');
  assert.equal(ready.status, 200, JSON.stringify(ready.body));
  assert.deepEqual(ready.body.workers.map((w: any) => [w.worker_id, w.lifecycle]), [[1, 'schedulable'], [2, 'schedulable']]);
  const prompt = Array.from({ length: 64 }, (_, i) => i + 1);
  const first = await call('POST', '/select_and_reserve', { model_name: 'llama', selection_id: 'a', token_ids: prompt });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.body.overlap.longest_matched, 0);
  assert.deepEqual(await call('POST', '/reservations/a/prefill_complete'), { status: 200, body: { status: 'ok' } });
  for (let i = 0; i < 3; i++) {
    const again = await call('POST', '/select', { model_name: 'llama', token_ids: [...prompt, ...Array.from({ length: 16 }, (_, j) => 1000 * (i + 1) + j)] });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.worker_id, first.body.worker_id, 'the booked prefix is on that worker');
    assert.equal(again.body.overlap.longest_matched, 64);
  }
  assert.deepEqual(await call('DELETE', '/reservations/a'), { status: 200, body: { status: 'ok' } });
  assert.equal((await call('DELETE', '/reservations/a')).status, 404);
  const bad = await call('POST', '/select', { model_name: 'llama', token_ids: 'nope' });
  assert.equal(bad.status, 422, JSON.stringify(bad.body));
  assert.match(bad.body.error, /token_ids/);
  // POST /workers: this isolate's catalog, u64 ids digit-exact through the Worker's JSON
  const added = await call('POST', '/workers', '{"worker_id": 18446744073709551615, "model_name": "other", "endpoint": "http://w3", "block_size": 16}');
  assert.equal(added.status, 201, added.text);
  assert.match(added.text ?? '', /^\{"worker_id":18446744073709551615,"model_name":"other",/);
  assert.match((await call('GET', '/workers?model_name=other')).text ?? '', /^\[\{"worker_id":18446744073709551615,/);
  assert.equal((await call('DELETE', '/workers/18446744073709551615')).status, 200);
  assert.equal((await call('DELETE', '/workers/18446744073709551616')).status, 400, 'not a u64');
});

test('workerd: POST /simulate runs two policies on a posted Mooncake trace, as Node does', { skip, timeout: 120_000 }, async () => {
  const r = await call('POST', '/simulate?policies=kv,round_robin&workers=4', TRACE);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.requests, 150);
  assert.deepEqual(r.body.policies.map((p: any) => p.policy), ['kv', 'round_robin']);
  const node = await import(pathToFileURL(join(root, 'build/dist/src/browser.js')).href) as typeof import('../../../src/browser.js');
  const expected = node.reportJson(await node.simulate(node.parseTrace(TRACE), { policies: 'kv,round_robin', fleet: { workers: 4 } })) as any;
  for (let i = 0; i < 2; i++) {
    const { wall_ms: _a, ...got } = r.body.policies[i];
    const { wall_ms: _b, ...want } = expected.policies[i];
    assert.deepEqual(got, want, `${want.policy}: workerd and Node simulate alike`);
  }
  const badLine = await call('POST', '/simulate', `${TRACE.split('\n')[0]}\n{"timestamp": 1, "input_length": "many"}\n`);
  assert.equal(badLine.status, 400);
  assert.match(badLine.body.error, /^trace line 2: /);
  const badPolicy = await call('POST', '/simulate?policies=kv,fastest', TRACE);
  assert.equal(badPolicy.status, 400);
  assert.match(badPolicy.body.error, /unknown policy "fastest"/);
  const tooMany = await call('POST', '/simulate?limit=1000000', TRACE);
  assert.equal(tooMany.status, 400);
  assert.match(tooMany.body.error, /^limit: at most 2000 requests.*SIM_MAX_REQUESTS/);
  const longTrace = await call('POST', '/simulate', FULL_TRACE.split('\n').slice(0, 2001).join('\n'));
  assert.equal(longTrace.status, 400, 'not cut silently');
  assert.match(longTrace.body.error, /more than 2000 requests .*pass limit=N/);
});

test('workerd: without useWasmModule the worker record says why (compiling refused) and what to do', { skip, timeout: 60_000 }, async () => {
  const r = await call('GET', '/', undefined, 'no-module');
  assert.equal(r.body.lifecycle, 'incomplete');
  const [reason] = r.body.not_schedulable_reasons as string[];
  assert.match(reason, /^reconciliation failed: cannot compile the embedded wasm index \(.*disallowed by embedder\)/, 'the runtime\'s message');
  assert.match(reason, /import build\/browser\/select-service\.wasm as a module and call useWasmModule\(module\) before the first use/, 'the remedy');
});

/**
 * The real `select-service` binary (build/dist/src/cli.js) in child processes: it serves on
 * `--port 0` and logs the bound port, loads `--workers-file`, selects, and exits 0 on SIGTERM
 * and SIGINT (a queued selection is answered 503 on the way down); bad flags and bad
 * environment exit 2 with a message naming the problem.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FLAGS, envHelp } from '../../../src/cli-args.js';
import { checkResponse } from '../../support/openapi-check.js';
import { VERSION } from '../../../src/version.js';
import { eventually } from '../../support/ports.js';
import { serviceFreeEnv } from '../../support/run-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const CLI = join(root, 'build/dist/src/cli.js');

interface Run { code: number | null; stdout: string; stderr: string }

/** Runs the CLI to completion. */
function runCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [CLI, ...args], { env: serviceFreeEnv(env) });
    let stdout = '', stderr = '';
    c.stdout.on('data', (d: Buffer) => { stdout += d; });
    c.stderr.on('data', (d: Buffer) => { stderr += d; });
    c.on('error', reject);
    c.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts the service; resolves once it logged its port. The child is killed after the test. */
async function startCli(t: TestContext, args: string[], env: Record<string, string>,
  where = ['--port', '0', '--host', '127.0.0.1']): Promise<{ child: ChildProcess; base: string; exited: Promise<Run> }> {
  const child = spawn(process.execPath, [CLI, ...where, ...args], { env: serviceFreeEnv(env) });
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let stdout = '', stderr = '';
  const exited = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  child.stderr!.on('data', (d: Buffer) => { stderr += d; });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d;
      for (const line of stdout.split('\n')) {
        if (!line.startsWith('{')) continue;
        const rec = JSON.parse(line) as { msg?: string; port?: number };
        if (rec.msg === 'select-service listening' && rec.port) resolve(rec.port);
      }
    });
    void exited.then((r) => reject(new Error(`exited early (${r.code}): ${r.stderr || r.stdout}`)));
  });
  return { child, base: `http://127.0.0.1:${port}`, exited };
}

/** A JSON POST; the response is checked against the OpenAPI document. */
async function post(base: string, path: string, body: unknown): Promise<Response> {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  checkResponse({ method: 'POST', url: path, status: res.status, contentType: res.headers.get('content-type'), text: await res.clone().text() });
  return res;
}

test('serves on --port 0, loads --workers-file, selects, and exits 0 on SIGTERM', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'select-cli-'));
  const file = join(dir, 'workers.json');
  await writeFile(file, JSON.stringify([{ worker_id: 1, model_name: 'model', endpoint: 'http://worker-1:8000', block_size: 4 }]));
  const { child, base, exited } = await startCli(t, ['--workers-file', file, '--log-level', 'info'], { DYN_ROUTER_USE_KV_EVENTS: 'false' });
  await eventually(async () => (await fetch(`${base}/health`)).status === 200, 10_000, '/health');
  const ready = await fetch(`${base}/ready`);
  assert.equal(ready.status, 200, 'the workers file was applied before listening');
  const reg = await post(base, '/workers', { worker_id: 2, model_name: 'model', endpoint: 'http://worker-2:8000', block_size: 4 });
  assert.equal(reg.status, 201);
  const sel = await post(base, '/select_and_reserve', { model_name: 'model', selection_id: 'cli-1', token_ids: [1, 2, 3, 4] });
  assert.equal(sel.status, 200);
  const body = (await sel.json()) as { selection_id: string; worker_id: number };
  assert.equal(body.selection_id, 'cli-1');
  assert.ok([1, 2].includes(body.worker_id));
  child.kill('SIGTERM');
  const r = await exited;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /"signal":"SIGTERM".*"msg":"shutting down"/);
  assert.match(r.stdout, /"msg":"stopped"/);
});

test('SIGINT with a selection queued: the queued request is answered 503 and the process exits 0', async (t) => {
  const { child, base, exited } = await startCli(t, [], { DYN_ROUTER_USE_KV_EVENTS: 'false', DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  assert.equal((await post(base, '/workers', { worker_id: 1, model_name: 'model', endpoint: 'http://w:1', block_size: 4, max_num_batched_tokens: 4 })).status, 201);
  assert.equal((await post(base, '/select_and_reserve', { model_name: 'model', selection_id: 'a', token_ids: [1, 2, 3, 4, 5, 6, 7, 8] })).status, 200);
  const queued = post(base, '/select_and_reserve', { model_name: 'model', selection_id: 'q', token_ids: [9, 10, 11, 12, 13, 14, 15, 16] });
  await eventually(async () => {
    const loads = (await (await fetch(`${base}/loads`)).json()) as { pending_count: number }[];
    return loads[0]?.pending_count === 1;
  }, 10_000, 'the request to queue');
  child.kill('SIGINT');
  const res = await queued;
  assert.equal(res.status, 503);
  assert.match(((await res.json()) as { error: string }).error, /shutting down/);
  const r = await exited;
  assert.equal(r.code, 0);
  assert.doesNotMatch(r.stdout, /timed out/, 'a graceful stop, not the hard deadline');
});

test('invalid flags and environment exit 2 with a message naming the problem', async () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [['--port', 'abc'], {}, /--port: must be an integer between 0 and 65535/],
    [['--port', '70000'], {}, /--port/],
    [['--bogus'], {}, /--bogus: unknown option/],
    [['--replica-sync-peers', 'tcp://127.0.0.1:5555'], {}, /--replica-sync-peers: requires --replica-sync-port/],
    [['--replica-sync-port', '0'], {}, /--replica-sync-port: must be an integer between 1 and 65535/],
    [['--router-assume-kv-reuse', '--no-router-assume-kv-reuse'], {}, /--router-assume-kv-reuse: cannot be used with --no-router-assume-kv-reuse/],
    [['--router-tracking-hash', 'sha1'], {}, /--router-tracking-hash: must be one of public-xxh3-v1, keyed-xxh3-v1/],
    [['--session-affinity-ttl-secs', '0'], {}, /--session-affinity-ttl-secs: must be between 1 and 31536000/],
    [['--session-affinity-mode', 'soft'], {}, /--session-affinity-mode: requires --session-affinity-ttl-secs/],
    [['--log-level', 'loud'], {}, /--log-level: must be one of/],
    [[], { DYN_ROUTER_TEMPERATURE: 'warm' }, /DYN_ROUTER_TEMPERATURE: must be a number/],
    [[], { DYN_ROUTER_QUEUE_POLICY: 'random' }, /DYN_ROUTER_QUEUE_POLICY: must be one of fcfs, lcfs, wspt/],
    [['--routing-policy', 'fastest'], {}, /--routing-policy: unknown routing policy "fastest" \(known: kv, ttft, llmd, sglang_cache_aware, ray_prefix_affinity\)/],
    [[], { SELECT_SERVICE_ROUTING_POLICY: 'ttft:speed=2' }, /SELECT_SERVICE_ROUTING_POLICY: ttft: unknown parameter "speed"/],
    [['--routing-policy', 'llmd:prefix_min_max=0.5'], {}, /--routing-policy: llmd: parameter "prefix_min_max" must be an integer in \[0, 1\] \(got 0.5\)/],
  ];
  for (const [args, env, message] of cases) {
    const r = await runCli(args, env);
    assert.equal(r.code, 2, `${args.join(' ')} ${JSON.stringify(env)}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stdout, '', 'nothing started');
  }
});

test('--routing-policy ttft (or SELECT_SERVICE_ROUTING_POLICY) routes by estimated time to first token; kv stays the default', async (t) => {
  // worker 1 holds a 40-block prefix of a finished prefill (its blocks are active decode load);
  // worker 2 is idle. Dynamo's cost charges worker 1 those 40 decode blocks and picks worker 2;
  // ttft estimates 16 uncached tokens on worker 1 against 64 on worker 2 and picks worker 1.
  const tokens = (n: number, from = 1): number[] => Array.from({ length: n }, (_, i) => from + i);
  const pick = async (args: string[], env: Record<string, string>): Promise<number> => {
    const { base } = await startCli(t, args, { DYN_ROUTER_USE_KV_EVENTS: 'false', ...env });
    for (const id of [1, 2]) {
      const r = await post(base, '/workers', { worker_id: id, model_name: 'model', endpoint: `http://worker-${id}:8000`, block_size: 4, total_kv_blocks: 100 });
      assert.equal(r.status, 201);
    }
    const warm = await post(base, '/reservations', { model_name: 'model', selection_id: 'warm', worker_id: 1, token_ids: tokens(160) });
    assert.equal(warm.status, 201, await warm.text());
    assert.equal((await post(base, '/reservations/warm/prefill_complete', {})).status, 200);
    const r = await post(base, '/select', { model_name: 'model', token_ids: [...tokens(48), ...tokens(16, 1000)] });
    assert.equal(r.status, 200);
    return ((await r.json()) as { worker_id: number }).worker_id;
  };
  assert.equal(await pick([], {}), 2, 'kv by default');
  assert.equal(await pick(['--routing-policy', 'ttft'], {}), 1, '--routing-policy ttft');
  assert.equal(await pick([], { SELECT_SERVICE_ROUTING_POLICY: 'ttft' }), 1, 'SELECT_SERVICE_ROUTING_POLICY=ttft');
  assert.equal(await pick(['--routing-policy', 'kv'], { SELECT_SERVICE_ROUTING_POLICY: 'ttft' }), 2, 'the flag wins over the variable');
});

test('--help lists every flag and exits 0; --version prints the package version', async () => {
  const help = await runCli(['--help']);
  assert.equal(help.code, 0);
  for (const f of FLAGS) assert.ok(help.stdout.includes(f.name), f.name);
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string };
  assert.equal(VERSION, pkg.version);
  const v = await runCli(['-V']);
  assert.deepEqual([v.code, v.stdout], [0, `${pkg.version}\n`]);
});

test('--help-env prints every variable with type, default and meaning; --help names each flag\'s variable', async () => {
  const r = await runCli(['--help-env']);
  assert.deepEqual([r.code, r.stdout], [0, `${envHelp()}\n`]);
  for (const name of ['SELECT_SERVICE_PORT', 'SELECT_SERVICE_HOST', 'SELECT_SERVICE_LOG_LEVEL', 'SELECT_SERVICE_WORKERS_FILE', 'DYN_ROUTER_TEMPERATURE',
    'DYN_ROUTER_USE_KV_EVENTS', 'DYN_USE_REMOTE_INDEXER', 'DYN_SHARED_CACHE_TYPE', 'DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS']) {
    assert.match(r.stdout, new RegExp(`^${name}  \\(`, 'm'), name);
  }
  assert.match(r.stdout, /^DYN_ROUTER_TEMPERATURE {2}\(number, default: 0\)$/m);
  const help = await runCli(['--help']);
  assert.match(help.stdout, /--port N .*\s+\[default: 8092\] \[env: SELECT_SERVICE_PORT\]/);
});

test('every line of --help, --help-env and `simulate --help` is at most 100 columns; wrapped lines stay under their column', async () => {
  for (const args of [['--help'], ['--help-env'], ['simulate', '--help']]) {
    const r = await runCli(args);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.ok(lines.length > 20, `${args.join(' ')} printed ${lines.length} lines`);
    const long = lines.filter((l) => l.length > 100);
    assert.deepEqual(long, [], `${args.join(' ')}: lines over 100 columns`);
  }
  // --help: a flag's help continues in its description column, not at the margin
  const help = (await runCli(['--help'])).stdout.split('\n');
  const at = help.findIndex((l) => l.startsWith('  --kv-events-turn-ms MILLIS'));
  const column = help[at].indexOf('busy time');
  assert.ok(column > 20);
  assert.match(help[at + 1], new RegExp(`^ {${column}}\\S`), 'the continuation starts under the description');
  // --help-env: the meaning of a variable continues under its indent
  const env = (await runCli(['--help-env'])).stdout.split('\n');
  const v = env.findIndex((l) => l.startsWith('DYN_ROUTER_QUEUE_THRESHOLD  ('));
  assert.match(env[v + 1], /^ {4}\S/);
  assert.match(env[v + 2], /^ {4}\S/, 'a long meaning wraps with the same indent');
});

test('SELECT_SERVICE_* variables stand in for flags; a flag wins; an unknown DYN_ROUTER_* variable is a warning naming the closest', async (t) => {
  // SELECT_SERVICE_PORT=1 would fail to bind: the --port flag wins over it; host and log level come from the environment
  const { child, base, exited } = await startCli(t, ['--port', '0'], {
    DYN_ROUTER_USE_KV_EVENTS: 'false', SELECT_SERVICE_PORT: '1', SELECT_SERVICE_HOST: '127.0.0.1', SELECT_SERVICE_LOG_LEVEL: 'debug',
    DYN_ROUTER_TEMPRATURE: '0.5', SELECT_SERVICE_PROT: '9',
  }, []);
  assert.equal((await fetch(`${base}/health`)).status, 200);
  child.kill('SIGTERM');
  const r = await exited;
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  const listening = lines.find((l) => l.msg === 'select-service listening');
  assert.equal(listening?.host, '127.0.0.1');
  assert.ok(lines.some((l) => l.msg === 'request completed' && l.level === 20), 'debug lines: the log level came from SELECT_SERVICE_LOG_LEVEL');
  const warned = lines.filter((l) => l.level === 40 && typeof l.variable === 'string').map((l) => `${l.variable} -> ${l.closest}`);
  assert.deepEqual(warned, ['DYN_ROUTER_TEMPRATURE -> DYN_ROUTER_TEMPERATURE', 'SELECT_SERVICE_PROT -> SELECT_SERVICE_PORT']);
});

test('a --workers-file that does not exist at start is exit 2 naming the flag or its variable; a bad SELECT_SERVICE_* value names the variable', async () => {
  const missing = join(tmpdir(), 'select-service-no-such-dir', 'workers.json');
  const r = await runCli(['--workers-file', missing]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, new RegExp(`--workers-file: no such file: ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  assert.equal(r.stdout, '', 'nothing started');
  const dir = await mkdtemp(join(tmpdir(), 'select-cli-'));
  const e = await runCli([], { SELECT_SERVICE_WORKERS_FILE: dir });
  assert.deepEqual([e.code, /SELECT_SERVICE_WORKERS_FILE: not a file/.test(e.stderr)], [2, true], e.stderr);
  const p = await runCli([], { SELECT_SERVICE_PORT: 'eighty' });
  assert.equal(p.code, 2);
  assert.match(p.stderr, /SELECT_SERVICE_PORT: must be an integer between 0 and 65535 \(got "eighty"\)/);
});

test('`select-service simulate` dispatches to the simulator module (a clear exit 2 while it is absent)', async () => {
  const r = await runCli(['simulate', '--help']);
  if (existsSync(join(root, 'build/dist/src/simulate-cli.js'))) {
    assert.doesNotMatch(r.stderr, /simulator is not available/);
  } else {
    assert.equal(r.code, 2);
    assert.match(r.stderr, /simulate: the simulator is not available/);
  }
});

/**
 * Every bad or rejected request docs/limits.md and docs/security.md list reaches real clients as
 * its documented status and `{"error"}` body, 20 times each: curl, Node's fetch, Python's urllib
 * and http.client (the machine's python3), aiohttp (from the Ray venv, .cache/ray-venv), and the
 * Python client (select_service_client: its blocking client and its asyncio client over its own
 * transport and over aiohttp), which raises it as SelectServiceError with that status.
 *
 * The answers given before the body is read (413 over the body limit, sized or chunked; 415, 401,
 * and the 404 and 405 of a GET, whose body Fastify does not read, before a 9 MiB body; 431 to
 * oversized headers followed by one; 408 to a body that stops half-way and goes on once the answer
 * is there) are the ones that used to be lost: the service closed while the client was still
 * sending. Those after the body (422 of a string over its limit, a prompt over --max-prompt-blocks
 * or an endpoint outside --allowed-endpoints, 429 at --max-bookings and --max-partitions) are here
 * so that the list is whole. Nothing a rejected request asked for happens. Real service processes on 127.0.0.1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startService, type ServiceProcess } from '../../support/service-process.js';
import { runProcess } from '../../support/run-process.js';

// compiled to build/dist/test/integration/http/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const DRIVER = join(root, 'test/support/early_answers.py');
const VENV_PYTHON = join(root, '.cache/ray-venv/bin/python');
const REPEAT = 20;
const TOKEN = 'early-answers-token';
const BIG = 9 * 1024 * 1024; // over the 8 MiB body limit, and more than the socket buffers take in

/** One request and the answer it must get (the shape test/support/early_answers.py reads). */
interface Case {
  name: string; method: string; path: string; token: boolean; content_type: string;
  body: unknown; chunked?: boolean; stall?: boolean;
  /** More request headers. */
  headers?: Record<string, string>;
  /** Which service: `limits` (the capacity and allowlist flags) or `timeout` (a short request timeout). */
  service: 'limits' | 'timeout';
  status: number; error: RegExp;
  /** The Python client cannot send it (it always sends its JSON sized, at once). */
  raw?: boolean;
}

const pad = { pad: BIG };
const worker = (id: number, extra: Record<string, unknown> = {}) =>
  ({ worker_id: id, model_name: 'm', endpoint: 'http://127.0.0.1:1', block_size: 4, ...extra });
const CASES: Case[] = [
  { name: 'over the body limit', method: 'POST', path: '/select', token: true, content_type: 'application/json', body: pad,
    service: 'limits', status: 413, error: /^Failed to buffer the request body: length limit exceeded$/ },
  { name: 'over the body limit, chunked', method: 'POST', path: '/select', token: true, content_type: 'application/json', body: pad,
    chunked: true, raw: true, service: 'limits', status: 413, error: /length limit exceeded/ },
  { name: 'not JSON', method: 'POST', path: '/select', token: true, content_type: 'text/plain', body: pad,
    raw: true, service: 'limits', status: 415, error: /^Expected request with `Content-Type: application\/json`$/ },
  { name: 'no token', method: 'POST', path: '/select', token: false, content_type: 'application/json', body: pad,
    service: 'limits', status: 401, error: /bearer token/ },
  // GET bodies are never read (Fastify parses bodies of other methods, and answers 413 past 8 MiB)
  { name: 'an unknown path, with a body', method: 'GET', path: '/no-such-route', token: true, content_type: 'application/json',
    body: pad, service: 'limits', status: 404, error: /^route not found$/ },
  { name: 'a method the route does not take, with a body', method: 'GET', path: '/select', token: true,
    content_type: 'application/json', body: pad, service: 'limits', status: 405, error: /^method not allowed$/ },
  { name: 'headers too large', method: 'POST', path: '/select', token: true, content_type: 'application/json', body: pad,
    headers: { 'x-padding': 'a'.repeat(20_000) }, service: 'limits', status: 431, error: /^request headers too large$/ },
  { name: 'a string over its limit', method: 'POST', path: '/workers', token: true, content_type: 'application/json',
    body: worker(2, { model_name: 'x'.repeat(5000) }), service: 'limits', status: 422, error: /model_name.*4096/ },
  { name: 'a prompt over --max-prompt-blocks', method: 'POST', path: '/select', token: true, content_type: 'application/json',
    body: { model_name: 'm', token_ids: Array.from({ length: 20 }, (_, i) => i) }, service: 'limits', status: 422,
    error: /5 blocks of 4 tokens is over the limit of 4 blocks per prompt \(--max-prompt-blocks\)/ },
  { name: 'an endpoint outside --allowed-endpoints', method: 'POST', path: '/workers', token: true, content_type: 'application/json',
    body: worker(3, { kv_events_endpoint: 'tcp://10.9.9.9:5557' }), service: 'limits', status: 422, error: /10\.9\.9\.9/ },
  { name: '--max-partitions', method: 'POST', path: '/workers', token: true, content_type: 'application/json',
    body: worker(4, { model_name: 'other' }), service: 'limits', status: 429, error: /partition/ },
  { name: '--max-bookings', method: 'POST', path: '/select_and_reserve', token: true, content_type: 'application/json',
    body: { selection_id: 'over', model_name: 'm', token_ids: [1, 2, 3, 4, 5, 6, 7, 8] }, service: 'limits', status: 429, error: /booking/ },
  { name: 'a body that stops half-way', method: 'POST', path: '/workers', token: true, content_type: 'application/json',
    body: worker(9), stall: true, raw: true, service: 'timeout', status: 408, error: /request timeout/ },
];

/** What one attempt got: the answer, or why it got none. */
type Outcome = { status: number; body: string } | { failure: string };

/** Checks every outcome of `client` against its case; returns the problems (empty = all good). */
function problems(client: string, outcomes: { case: string; outcome: Outcome }[]): string[] {
  const out: string[] = [];
  for (const c of CASES) {
    const got = outcomes.filter((o) => o.case === c.name);
    if (got.length === 0) continue;
    if (got.length !== REPEAT) out.push(`${client}, ${c.name}: ${got.length} attempts, not ${REPEAT}`);
    for (const { outcome } of got) {
      if ('failure' in outcome) { out.push(`${client}, ${c.name}: no answer: ${outcome.failure}`); continue; }
      let error: unknown;
      try { error = (JSON.parse(outcome.body) as { error?: unknown }).error; } catch { error = undefined; }
      if (outcome.status !== c.status || typeof error !== 'string' || !c.error.test(error)) {
        out.push(`${client}, ${c.name}: ${outcome.status} ${outcome.body.slice(0, 200)} (expected ${c.status} ${c.error})`);
      }
    }
  }
  return [...new Set(out)];
}

interface Target { url: string; file(c: Case): string }

/**
 * curl: the body from a file, sized or chunked. curl cannot stall and still read (it blocks while
 * its stdin has nothing), so its body that "stops half-way" is a 1 MB one sent at 20 kB/s: the
 * 408 comes after the 500 ms request timeout, some 50 s before the body could be complete.
 */
async function viaCurl(target: Record<Case['service'], Target>): Promise<{ case: string; outcome: Outcome }[]> {
  const out: { case: string; outcome: Outcome }[] = [];
  for (const c of CASES) {
    const t = target[c.service];
    const args = ['-sS', '-o', '-', '-w', '\n%{http_code}', '-X', c.method, '-H', `content-type: ${c.content_type}`,
      ...(c.token ? ['-H', `authorization: Bearer ${TOKEN}`] : []), ...(c.chunked ? ['-H', 'transfer-encoding: chunked'] : []),
      ...Object.entries(c.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
      ...(c.stall ? ['--limit-rate', '20k'] : []), '--max-time', '60', '--data-binary', `@${t.file(c)}`, t.url + c.path];
    for (let i = 0; i < REPEAT; i++) {
      const r = await runProcess('curl', args, root, 90_000);
      const nl = r.stdout.lastIndexOf('\n');
      out.push({ case: c.name, outcome: r.code === 0 ? { status: Number(r.stdout.slice(nl + 1)), body: r.stdout.slice(0, nl) }
        : { failure: `curl exit ${r.code}: ${r.stderr.trim()}` } });
    }
  }
  return out;
}

/**
 * Node's fetch: a Buffer (sized), a stream (chunked), or a stream that waits for the answer. The
 * fetch standard forbids a body on a GET, so fetch sends none of those cases.
 */
async function viaFetch(target: Record<Case['service'], Target>): Promise<{ case: string; outcome: Outcome }[]> {
  const out: { case: string; outcome: Outcome }[] = [];
  for (const c of CASES) {
    if (c.method === 'GET') continue;
    const data = bodyOf(c);
    const bytes: BodyInit = new Uint8Array(data); // a copy fetch's types take (a Buffer's memory may be shared)
    for (let i = 0; i < REPEAT; i++) {
      let answered: () => void = () => {};
      const answer = new Promise<void>((resolve) => { answered = resolve; });
      const stream = (first: Buffer, rest: Buffer, wait: boolean): ReadableStream<Uint8Array> => {
        let step = 0;
        return new ReadableStream({
          async pull(ctl) {
            if (step++ === 0) { ctl.enqueue(first); return; }
            if (wait) await answer;
            ctl.enqueue(rest);
            ctl.close();
          },
        });
      };
      const headers: Record<string, string> = { 'content-type': c.content_type, ...(c.token ? { authorization: `Bearer ${TOKEN}` } : {}),
        ...c.headers };
      let body: BodyInit = bytes;
      if (c.stall) { body = stream(data.subarray(0, 10), data.subarray(10), true); headers['content-length'] = String(data.length); }
      else if (c.chunked) body = stream(data.subarray(0, 1 << 20), data.subarray(1 << 20), false);
      try {
        const res = await fetch(target[c.service].url + c.path, { method: c.method, headers, body, duplex: 'half' } as RequestInit);
        answered();
        out.push({ case: c.name, outcome: { status: res.status, body: await res.text() } });
      } catch (err) {
        answered();
        const e = err as Error & { cause?: Error };
        out.push({ case: c.name, outcome: { failure: `${e.message}${e.cause ? `: ${e.cause.message}` : ''}` } });
      }
    }
  }
  return out;
}

function bodyOf(c: Case): Buffer {
  return (c.body as { pad?: number }).pad !== undefined ? Buffer.from(`{"pad":"${'a'.repeat(BIG)}"}`) : Buffer.from(JSON.stringify(c.body));
}

/** test/support/early_answers.py with `python` as `client`, per service. */
async function viaPython(python: string, client: string, target: Record<Case['service'], Target>): Promise<{ case: string; outcome: Outcome }[]> {
  const out: { case: string; outcome: Outcome }[] = [];
  const typed = client.startsWith('client');
  for (const service of ['limits', 'timeout'] as const) {
    const cases = CASES.filter((c) => c.service === service && !(typed && c.raw));
    if (cases.length === 0) continue;
    const input = JSON.stringify(cases.map(({ error: _e, status: _s, ...c }) => c));
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(python, [DRIVER, client, target[service].url, TOKEN, String(REPEAT)], {
        cwd: root, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONPATH: join(root, 'clients/python') },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = ''; let stderr = '';
      child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
      child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      child.once('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(input);
    });
    assert.equal(r.code, 0, `${python} early_answers.py ${client}:\n${r.stderr}`);
    for (const line of r.stdout.trim().split('\n')) {
      const { case: name, ...outcome } = JSON.parse(line) as { case: string } & Outcome;
      out.push({ case: name, outcome: outcome as Outcome });
    }
  }
  return out;
}

/** Why `python` cannot run a client, or null. */
function pythonMissing(python: string, imports: string): string | null {
  if (python !== 'python3' && !existsSync(python)) return `no ${python} (scripts/ray-venv.sh makes the Ray venv)`;
  const r = spawnSync(python, ['-c', `import sys; assert sys.version_info >= (3, 9), sys.version; import ${imports}`], {
    encoding: 'utf8', env: { ...process.env, PYTHONPATH: join(root, 'clients/python') }, timeout: 60_000,
  });
  return r.status === 0 ? null : `${python} cannot import ${imports}: ${(r.error?.message ?? r.stderr).trim().split('\n').pop()}`;
}

test('every early or rejected answer reaches curl, fetch, urllib, http.client, aiohttp and the Python client, 20 times each', { timeout: 600_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'early-answers-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'tokens'), `${TOKEN}\n`);
  const files = new Map<string, string>();
  for (const c of CASES) {
    const f = join(dir, `body-${files.size}`);
    // curl's stalled body: the same request, padded to 1 MB (an unknown field; see viaCurl)
    await writeFile(f, c.stall ? JSON.stringify({ ...(c.body as object), pad: 'a'.repeat(1_000_000) }) : bodyOf(c));
    files.set(c.name, f);
  }
  const services: ServiceProcess[] = [];
  t.after(async () => { await Promise.all(services.map((s) => s.stop())); });
  const auth = ['--auth-token-file', join(dir, 'tokens')];
  const started = await Promise.all([
    startService([...auth, '--max-bookings', '1', '--max-partitions', '1', '--max-prompt-blocks', '4', '--allowed-endpoints', '127.0.0.1']),
    startService([...auth, '--request-timeout-ms', '500']),
  ]);
  services.push(...started);
  const [limits, timeout] = started;
  const call = async (s: ServiceProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(s.url + path, { method, body: body === undefined ? undefined : JSON.stringify(body),
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } });
    return { status: res.status, body: await res.json() };
  };
  // the one partition and the one booking the limits allow
  assert.equal((await call(limits, 'POST', '/workers', worker(1))).status, 201);
  assert.equal((await call(limits, 'POST', '/select_and_reserve', { selection_id: 'held', model_name: 'm', token_ids: [1, 2, 3, 4] })).status, 200);
  const file = (c: Case): string => files.get(c.name)!;
  const target = { limits: { url: limits.url, file }, timeout: { url: timeout.url, file } };

  const clients: [string, () => Promise<{ case: string; outcome: Outcome }[]>][] = [];
  const skipped: string[] = [];
  const curl = spawnSync('curl', ['--version']);
  if (curl.status === 0) clients.push(['curl', () => viaCurl(target)]);
  else skipped.push('curl: not installed');
  clients.push(['fetch', () => viaFetch(target)]);
  const python3 = pythonMissing('python3', 'urllib.request, http.client, select_service_client');
  if (python3 === null) {
    for (const c of ['urllib', 'http.client', 'client', 'client-asyncio']) clients.push([c, () => viaPython('python3', c, target)]);
  } else skipped.push(`urllib, http.client and the Python client: ${python3}`);
  const venv = pythonMissing(VENV_PYTHON, 'aiohttp, select_service_client');
  if (venv === null) for (const c of ['aiohttp', 'client-aiohttp']) clients.push([c, () => viaPython(VENV_PYTHON, c, target)]);
  else skipped.push(`aiohttp: ${venv}`);

  // the clients run side by side: the service answers them all at once
  const results = await Promise.all(clients.map(async ([name, run]) => problems(name, await run())));
  assert.deepEqual(results.flat(), [], 'every attempt read its documented status and error');
  t.diagnostic(`clients: ${clients.map(([n]) => n).join(', ')}`);
  for (const s of skipped) t.diagnostic(`not run: ${s}`);

  // nothing a rejected request asked for happened
  assert.deepEqual((await call(limits, 'GET', '/workers')).body.map((w: { worker_id: number }) => w.worker_id), [1]);
  assert.deepEqual((await call(timeout, 'GET', '/workers')).body, [], 'a body completed after its 408 was not run');
  if (skipped.length > 0) t.skip(`some clients were not run: ${skipped.join('; ')}`);
});

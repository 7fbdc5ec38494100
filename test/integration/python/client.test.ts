/**
 * The Python client's unittest suite (clients/python/tests) against real service processes: three
 * built `select-service` processes on 127.0.0.1 whose URLs the Python tests read from the
 * environment (see clients/python/tests/_support.py):
 * - SELECT_SERVICE_URL: defaults plus replica sync (so the peer routes answer 201/200/404);
 * - SELECT_SERVICE_QUEUE_URL: policy classes (class `latency` rejects with 429 and details once a
 *   worker is busy) and no pending-selection cache (every replay reservation is a 404);
 * - SELECT_SERVICE_EMPTY_URL: never gets a schedulable worker (/ready 503, /select 503).
 * Skipped, with the reason, when no `python3` >= 3.9 is on the PATH.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startService, type ServiceProcess } from '../../support/service-process.js';
import { reservedPort } from '../../support/ports.js';
import { runProcess } from '../../support/run-process.js';

// compiled to build/dist/test/integration/python/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const PYTHON = 'python3';

/** Why the suite cannot run here, or null. */
function pythonMissing(): string | null {
  const r = spawnSync(PYTHON, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return `${PYTHON} is not available (${r.error?.message ?? r.stderr.trim()})`;
  const [major, minor] = r.stdout.trim().split('.').map(Number);
  return major > 3 || (major === 3 && minor >= 9) ? null : `${PYTHON} is ${r.stdout.trim()}; the client needs >= 3.9`;
}

const POLICY = [
  'default_policy_family: standard',
  'uncached_isl_buckets: [{min_tokens: 0, bucket: all}]',
  'policy_classes:',
  '  - {name: std, policy_family: standard, cache_bucket: all, quantum: 1, prefill_busy_threshold_frac: 1.0, request_queue_limit_per_worker: 4}',
  '  - {name: latency, quantum: 1, prefill_busy_threshold: 0, request_queue_limit_per_worker: 0}',
].join('\n');

/** Runs the unittest suite (`-v`: one line per test in the output). */
async function runUnittest(env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  const r = await runProcess(PYTHON, ['-m', 'unittest', 'discover', '-s', 'clients/python/tests', '-v'], root, timeoutMs,
    { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1', ...env });
  return { code: r.code, output: `${r.stdout}${r.stderr}` };
}

test('the Python client suite passes against real services', async (t) => {
  const missing = pythonMissing();
  if (missing) { t.skip(missing); return; }
  const dir = await mkdtemp(join(tmpdir(), 'python-client-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const policy = join(dir, 'policy.yaml');
  await writeFile(policy, POLICY);

  const services: ServiceProcess[] = [];
  t.after(async () => { await Promise.all(services.map((s) => s.stop())); });
  const started = await Promise.all([
    reservedPort().then((port) => startService(['--replica-sync-port', String(port)])),
    startService(['--selection-cache-max-entries', '0'], { DYN_ROUTER_POLICY_CONFIG: policy }),
    startService([]),
  ]);
  services.push(...started);
  const [main, queue, empty] = started;

  const { code, output } = await runUnittest({
    SELECT_SERVICE_URL: main.url, SELECT_SERVICE_QUEUE_URL: queue.url, SELECT_SERVICE_EMPTY_URL: empty.url,
  }, 120_000);
  assert.equal(code, 0, `python unittest failed:\n${output}`);
  const ran = /Ran (\d+) tests? in/.exec(output);
  assert.ok(ran && Number(ran[1]) > 0, `no tests ran:\n${output}`);
  assert.doesNotMatch(output, /skipped/i, `with every service up, no Python test may skip:\n${output}`);
  t.diagnostic(`python: ${ran[1]} tests`);
});

test('examples/ray_serve_router.py is valid Python (also without Ray; test/integration/ray runs it in a real Ray Serve)', (t) => {
  const missing = pythonMissing();
  if (missing) { t.skip(missing); return; }
  const r = spawnSync(PYTHON, ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])', 'examples/ray_serve_router.py'],
    { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

/**
 * SelectServiceRouter in a real Ray Serve: the Python suite clients/python/tests_ray (unittest) in
 * the Ray venv (.cache/ray-venv, made by scripts/ray-venv.sh: Ray 2.58.0, aiohttp, pyzmq, msgpack
 * and this repository's client), against two real service processes on 127.0.0.1:
 * - SELECT_SERVICE_URL: approximate mode (DYN_ROUTER_USE_KV_EVENTS=false);
 * - SELECT_SERVICE_KV_URL: fed by KV events (the fake engines publish vLLM batches over ZMQ PUB);
 * - SELECT_SERVICE_NODE / SELECT_SERVICE_CLI: the outage test starts, stops and restarts its own.
 * One Ray session per test module (about 1.5 GB while it runs); each module shuts Ray down and
 * checks its processes are gone. Skipped, with the reason, when the venv is not there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI, startService, type ServiceProcess } from '../../support/service-process.js';

// compiled to build/dist/test/integration/ray/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const PYTHON = join(root, '.cache/ray-venv/bin/python');
const SUITE_TIMEOUT_MS = 300_000; // two Ray sessions: test_serve.py, then test_order.py
/** What makes the venv, as the skip message says it. */
const MAKE_VENV = 'bash scripts/ray-venv.sh (Ray 2.58.0 and the rest, with pip as this machine configures it; other indexes: '
  + 'docs/development.md, "The Ray tests on another machine")';

/** Why the suite cannot run here, or null. */
function venvMissing(): string | null {
  if (!existsSync(PYTHON)) return `no Ray venv at .cache/ray-venv: run ${MAKE_VENV}`;
  const r = spawnSync(PYTHON, ['-c', 'import ray, ray.serve, aiohttp, zmq, msgpack, select_service_client; print(ray.__version__)'],
    { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) return `the Ray venv cannot import what the suite needs (${(r.error?.message ?? r.stderr).trim().split('\n').pop()}): run ${MAKE_VENV}`;
  return r.stdout.trim() === '2.58.0' ? null : `the Ray venv has Ray ${r.stdout.trim()}, not 2.58.0: run ${MAKE_VENV}`;
}

/** Runs the suite in its own process group, so that a timeout ends Ray's processes too. */
function runSuite(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(PYTHON, ['-m', 'unittest', 'discover', '-s', 'clients/python/tests_ray', '-v'],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (d: Buffer) => { output += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { output += d.toString(); });
    const group = (signal: NodeJS.Signals): void => { try { process.kill(-child.pid!, signal); } catch { /* gone */ } };
    const timer = setTimeout(() => {
      output += `\n[timed out after ${SUITE_TIMEOUT_MS} ms: SIGTERM, then SIGKILL to the suite's process group]`;
      group('SIGTERM');
      setTimeout(() => group('SIGKILL'), 10_000).unref();
    }, SUITE_TIMEOUT_MS);
    child.once('close', (code) => { clearTimeout(timer); group('SIGKILL'); resolve({ code, output }); });
  });
}

test('SelectServiceRouter routes a real Ray Serve deployment (clients/python/tests_ray)', { timeout: SUITE_TIMEOUT_MS + 30_000 }, async (t) => {
  const missing = venvMissing();
  if (missing) { t.skip(missing); return; }
  const services: ServiceProcess[] = [];
  t.after(async () => { await Promise.all(services.map((s) => s.stop())); });
  const started = await Promise.all([
    startService([], { DYN_ROUTER_USE_KV_EVENTS: 'false' }),
    startService([], { DYN_ROUTER_USE_KV_EVENTS: 'true' }),
  ]);
  services.push(...started);
  const [approximate, kv] = started;

  const { code, output } = await runSuite({
    ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1',
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER: '0', RAY_USAGE_STATS_ENABLED: '0',
    SELECT_SERVICE_URL: approximate.url, SELECT_SERVICE_KV_URL: kv.url,
    SELECT_SERVICE_NODE: process.execPath, SELECT_SERVICE_CLI: CLI,
  });
  assert.equal(code, 0, `the Ray suite failed:\n${output.slice(-20_000)}`);
  const ran = /Ran (\d+) tests? in/.exec(output);
  assert.ok(ran && Number(ran[1]) > 0, `no tests ran:\n${output.slice(-5_000)}`);
  assert.doesNotMatch(output, /\.\.\. skipped|\(skipped=/, `with the venv and every service up, no Ray test may skip:\n${output.slice(-5_000)}`);
  t.diagnostic(`ray: ${ran[1]} tests`);
});

/**
 * The fake engine of the Ray routing bench (`npm run bench -- ray-routing`), without Ray: its
 * prefix cache, eviction and KV events (bench/ray_routing_engine_test.py, stdlib unittest, run
 * with `python3` in bench/). The bench's figures are only as good as this engine. No Ray starts
 * here, so the test needs neither the Ray venv nor the machine's Ray lock. Skipped, with the
 * reason, when no `python3` >= 3.9 is on the PATH.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runProcess } from '../../support/run-process.js';

// compiled to build/dist/test/integration/ray/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');

test('the Ray routing bench\'s fake engine caches, evicts and publishes as vLLM does (bench/ray_routing_engine_test.py)', async (t) => {
  const v = spawnSync('python3', ['-c', 'import sys; assert sys.version_info >= (3, 9)'], { encoding: 'utf8' });
  if (v.error || v.status !== 0) { t.skip(`python3 >= 3.9 is not available (${v.error?.message ?? v.stderr.trim()})`); return; }
  const r = await runProcess('python3', ['-m', 'unittest', 'ray_routing_engine_test', '-v'], join(root, 'bench'), 60_000,
    { ...process.env, PYTHONDONTWRITEBYTECODE: '1' });
  const output = `${r.stdout}${r.stderr}`;
  assert.equal(r.code, 0, output);
  assert.match(output, /Ran [1-9]\d* tests? in/, output);
});

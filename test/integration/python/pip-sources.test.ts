/**
 * scripts/ray-venv.sh fetches with pip as the machine configures it (scripts/pip-sources.py):
 * every configured source is named with whether it answers, sources that do not answer are left
 * out of the run (the rest passed back as PIP_* variables), no source at all is an error naming
 * what to set, `pip config` sections and the environment take precedence as in pip; and neither
 * script holds a path of one machine. Sources here are folders and a local HTTP server on
 * 127.0.0.1 (and a reserved port where nothing listens). Skipped, with the reason, without python3.
 * And scripts/ray-venv.sh without the python it is told to use fails saying what to set.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runProcess } from '../../support/run-process.js';
import { releasePort, reservedPort } from '../../support/ports.js';

// compiled to build/dist/test/integration/python/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const SCRIPT = join(root, 'scripts/pip-sources.py');

function pythonMissing(): string | null {
  const r = spawnSync('python3', ['-m', 'pip', '--version'], { encoding: 'utf8' });
  return r.error || r.status !== 0 ? `python3 with pip is not available (${r.error?.message ?? r.stderr.trim()})` : null;
}

/** pip-sources.py with only these PIP_* settings (no config file of this machine). */
async function sources(pip: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('PIP_')) env[k] = v;
  return runProcess('python3', [SCRIPT], root, 60_000, { ...env, PIP_CONFIG_FILE: '/dev/null', ...pip });
}

/** An index on 127.0.0.1 that answers every path 404 (an answer is all the check asks). */
async function localIndex(t: TestContext): Promise<string> {
  const server = createServer((_req, res) => { res.statusCode = 404; res.end(); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const addr = server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/simple`;
}

test('every configured source answers: they are listed and pip is left as configured', async (t) => {
  const missing = pythonMissing();
  if (missing) { t.skip(missing); return; }
  const dir = await mkdtemp(join(tmpdir(), 'pip-sources-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const index = await localIndex(t);
  const r = await sources({ PIP_INDEX_URL: index, PIP_EXTRA_INDEX_URL: `file://${dir}`, PIP_FIND_LINKS: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '', 'no overrides');
  assert.match(r.stderr, new RegExp(`index-url ${index}: ok`));
  assert.match(r.stderr, new RegExp(`extra-index-url file://${dir}: ok`));
  assert.match(r.stderr, new RegExp(`find-links ${dir}: ok`));
});

test('sources that do not answer are named and left out; the others are passed on', async (t) => {
  const missing = pythonMissing();
  if (missing) { t.skip(missing); return; }
  const dir = await mkdtemp(join(tmpdir(), 'pip-sources-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const port = await reservedPort(); // nothing listens there
  t.after(() => releasePort(port));
  const down = `http://127.0.0.1:${port}/simple`;
  const index = await localIndex(t);
  const r = await sources({ PIP_INDEX_URL: down, PIP_EXTRA_INDEX_URL: `file://${dir}/none ${index} file://${dir}`, PIP_FIND_LINKS: `${dir}/gone ${dir}` });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`index-url ${down}: does not answer`));
  assert.match(r.stderr, new RegExp(`extra-index-url file://${dir}/none: no such folder`));
  assert.match(r.stderr, new RegExp(`find-links ${dir}/gone: no such folder`));
  assert.deepEqual(r.stdout.trim().split('\n'), [
    `PIP_INDEX_URL=${index}`, `PIP_EXTRA_INDEX_URL=file://${dir}`, `PIP_FIND_LINKS=${dir}`,
  ]);
});

test('pip\'s default index is used when nothing is set; with no source answering, the script fails saying what to set', async (t) => {
  const missing = pythonMissing();
  if (missing) { t.skip(missing); return; }
  const port = await reservedPort();
  t.after(() => releasePort(port));
  const none = await sources({ PIP_INDEX_URL: `http://127.0.0.1:${port}/simple` });
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no package source answers: set PIP_INDEX_URL/);
  // --no-index with a folder of wheels: only the folder
  const dir = await mkdtemp(join(tmpdir(), 'pip-sources-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const wheels = await sources({ PIP_NO_INDEX: '1', PIP_FIND_LINKS: dir });
  assert.equal(wheels.code, 0, wheels.stderr);
  assert.doesNotMatch(wheels.stderr, /index-url/);
  // the default index is named as such (whether it answers from here is not this test's business)
  const r = spawnSync('python3', ['-c', [
    'import importlib.util as u, sys',
    'spec = u.spec_from_file_location("pip_sources", sys.argv[1]); m = u.module_from_spec(spec); spec.loader.exec_module(m)',
    'print(m.sources(m.effective("")))',
    'print(m.effective("global.index-url=\'a\'\\ninstall.index-url=\'b\'\\nglobal.find-links=\'f\'\\n:env:.find-links=\'g h\'\\nfreeze.no-index=\'1\'"))',
  ].join('\n'), SCRIPT], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), [
    "[('index-url', 'https://pypi.org/simple', True)]",
    "{'index-url': 'b', 'find-links': 'g h'}", // [install] over [global], the environment over both; other commands' sections ignored
  ]);
});

test('scripts/ray-venv.sh and scripts/pip-sources.py hold no path of one machine', async () => {
  for (const file of ['scripts/ray-venv.sh', 'scripts/pip-sources.py']) {
    const text = await readFile(join(root, file), 'utf8');
    const paths = [...text.matchAll(/(?:file:\/\/)?\/(?:opt|work|root|home|usr\/local|srv|mnt|data)\/[^\s'"`)]*/g)].map((m) => m[0]);
    assert.deepEqual(paths, [], `${file} names paths of one machine`);
  }
});

test('scripts/ray-venv.sh without the python it is told to use says what to set and makes no venv', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ray-venv-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const r = await runProcess('bash', [join(root, 'scripts/ray-venv.sh')], root, 60_000,
    { ...process.env, RAY_VENV: join(dir, 'venv'), PYTHON: 'no-such-python3' });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /^ray-venv: no no-such-python3 here: set PYTHON to a python3 >= 3\.10/m);
  assert.deepEqual(await readdir(dir), [], 'no venv made');
});

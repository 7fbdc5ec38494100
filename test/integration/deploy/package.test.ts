/**
 * The container image's steps without a Docker engine: `npm pack` (what the build stage ships),
 * `npm install --omit=dev <tarball>` into an empty folder (the runtime stage), then the installed
 * `select-service` bin is started and answers `/health`, and the Dockerfile's own HEALTHCHECK
 * command passes against it (and fails against a closed port). Needs npm and the registry (or
 * npm's cache: `--prefer-offline`); skipped, with the reason, only when npm itself is missing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService } from '../../support/service-process.js';
import { reservedPort, unboundIpcEndpoint } from '../../support/ports.js';
import { runProcess as run } from '../../support/run-process.js';
import { execForm, parseDockerfile, readRepoFile, root } from './files.js';

const pkg = JSON.parse(readRepoFile('package.json')) as {
  name: string; version: string; bin: Record<string, string>; main: string; types: string;
  exports: Record<string, Record<string, string>>; dependencies: Record<string, string>; devDependencies: Record<string, string>;
};

/**
 * Files the package must carry: every entry point package.json names, the embedded wasm, the wasm
 * as a file (for hosts that must be handed a compiled module: useWasmModule), the page.
 */
const REQUIRED = [...new Set([
  ...Object.values(pkg.bin), pkg.main, pkg.types,
  ...Object.values(pkg.exports).flatMap((e) => Object.values(e)),
  'build/dist/src/generated/wasm-bytes.js', 'build/browser/select-service.wasm', 'build/web/index.html', 'build/web/sim-page.js',
  'README.md', 'package.json',
].map((p) => p.replace(/^\.\//, '')))];

/** What must not ship: tests, benchmarks, the test oracle, sources, source maps, build leftovers. */
const FORBIDDEN = [
  /^build\/dist\/(test|bench|web)\//, /^build\/wasm\//, /\/core\/reference\//, /\.map$/, /(?<!\.d)\.ts$/,
  /^(src|test|bench|web|assembly|scripts|clients|examples|deploy)\//, /^build\/web\/BUILT$/,
];

/** The HEALTHCHECK command of the Dockerfile's runtime stage (exec form after CMD). */
function healthcheckCommand(): string[] {
  const ins = parseDockerfile(readRepoFile('Dockerfile')).filter((i) => i.op === 'HEALTHCHECK');
  assert.equal(ins.length, 1, 'one HEALTHCHECK');
  const cmd = /\bCMD\s+(\[.*\])$/.exec(ins[0].args);
  assert.ok(cmd, `HEALTHCHECK uses the exec form: ${ins[0].args}`);
  return execForm(cmd[1]);
}

test('the packed package installs with --omit=dev, starts, answers /health and passes the image HEALTHCHECK', { timeout: 300_000 }, async (t) => {
  const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' });
  if (npm.error || npm.status !== 0) { t.skip(`npm is not available (${npm.error?.message ?? npm.stderr})`); return; }
  const dir = await mkdtemp(join(tmpdir(), 'select-service-pack-'));
  t.after(() => rm(dir, { recursive: true, force: true }));

  // the build stage: npm pack of the built tree (scripts off: the tree is built already)
  const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], root, 120_000);
  assert.equal(pack.code, 0, `npm pack failed:\n${pack.stderr}`);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  const files = info.files.map((f) => f.path);
  assert.deepEqual(REQUIRED.filter((f) => !files.includes(f)), [], 'every entry point and the wasm are in the tarball');
  assert.deepEqual(files.filter((f) => FORBIDDEN.some((re) => re.test(f))), [], 'nothing but what runs');
  t.diagnostic(`tarball: ${files.length} files`);

  // the runtime stage: install the tarball, production dependencies only
  const app = join(dir, 'app');
  await mkdir(app);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'install-check', private: true }));
  const install = await run('npm', ['install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', join(dir, info.filename)],
    app, 240_000);
  assert.equal(install.code, 0, `npm install failed:\n${install.stdout}\n${install.stderr}`);
  const installed = JSON.parse(await readFile(join(app, 'node_modules', pkg.name, 'package.json'), 'utf8')) as { version: string };
  assert.equal(installed.version, pkg.version);
  // a devDependency that a production dependency also needs (ajv, through fastify) is installed
  // for that dependency; the lock file marks the ones only development needs
  const lock = JSON.parse(readRepoFile('package-lock.json')) as { packages: Record<string, { dev?: boolean }> };
  const devOnly = Object.keys(pkg.devDependencies).filter((d) => lock.packages[`node_modules/${d}`]?.dev === true);
  assert.ok(devOnly.includes('typescript') && devOnly.includes('assemblyscript'), 'the lock file marks dev-only packages');
  assert.deepEqual(devOnly.filter((d) => existsSync(join(app, 'node_modules', d))), [], 'no development-only package is installed');
  assert.deepEqual(Object.keys(pkg.dependencies).filter((d) => !existsSync(join(app, 'node_modules', d))), []);

  // start the installed bin (KV events on: the worker below makes the installed zeromq open a socket)
  const bin = join(app, 'node_modules', '.bin', Object.keys(pkg.bin)[0]);
  const s = await startService([], { DYN_ROUTER_USE_KV_EVENTS: 'true' }, 60_000, [bin]);
  t.after(() => s.stop());
  assert.deepEqual(await s.request('GET', '/health'), { status: 200, body: { status: 'ok' } });
  const worker = await s.request('POST', '/workers', {
    worker_id: 1, model_name: 'm', endpoint: 'http://w:8000', block_size: 16, kv_events_endpoint: unboundIpcEndpoint(t),
  });
  assert.equal(worker.status, 201);
  assert.equal(worker.body.lifecycle, 'schedulable', JSON.stringify(worker.body));
  assert.equal((await s.request('GET', '/ready')).status, 200);

  // the image's HEALTHCHECK, as Docker would run it (node on the PATH, the URL from the env)
  const [cmd, ...args] = healthcheckCommand();
  const check = (url: string) => spawnSync(cmd, args, { env: { ...process.env, SELECT_SERVICE_HEALTHCHECK_URL: url }, timeout: 10_000 });
  assert.equal(check(`${s.url}/health`).status, 0, 'healthy');
  assert.equal(check(`http://127.0.0.1:${await reservedPort()}/health`).status, 1, 'nothing listening (a reserved port): unhealthy');
});

#!/usr/bin/env node
// Runs every compiled test file (build/dist/test/**/*.test.js) with node's test runner, two files
// at a time; those in ALONE (below) afterwards, by themselves.
// Extra arguments are substrings that select test files, e.g. `npm test -- radix`; those starting
// with `-` go to node's test runner, e.g. `npm test -- --test-reporter=spec`.
//
// Tests run from the build `npm test` made before them (scripts/build.mjs --if-stale): none may
// change build/ meanwhile (a rebuild replaces files other tests are spawning or importing). A
// fingerprint of build/ is taken before and after; any change fails the run and is listed. A
// change to the build's inputs (a test writing into src/, test/, ...) is listed as a warning: the
// next `npm test` or `npm start` rebuilds.
import { spawnSync } from 'node:child_process';
import { readdirSync, existsSync } from 'node:fs';
import { join, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { changes, fingerprint } from './tree-fingerprint.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'build/dist/test');
// what scripts/build.mjs reads to decide whether the build is stale
const INPUTS = ['src', 'test', 'bench', 'web', 'assembly', 'tsconfig.json', 'asconfig.json', 'package.json'];
const files = [];
(function walk(d) {
  if (!existsSync(d)) return;
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith('.test.js')) files.push(p);
  }
})(dir);
const options = process.argv.slice(2).filter((a) => a.startsWith('-'));
const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const chosen = files.filter((f) => filters.length === 0 || filters.some((s) => relative(root, f).includes(s))).sort();
if (chosen.length === 0) { console.error('no test files found under build/dist/test'); process.exit(1); }

const build = fingerprint(root, ['build']);
const inputs = fingerprint(root, INPUTS);
// Files that take the whole machine run after the rest, one at a time: a Ray session (two per
// ray-serve test, about 1.5 GB and both cores of a CI machine) starves the tests beside it, and
// some of those hold real time limits (a restarted replica agrees with its peers within 10 s).
const ALONE = ['integration/ray/ray-serve.test.js'];
const alone = chosen.filter((f) => ALONE.some((s) => f.endsWith(s)));
const shared = chosen.filter((f) => !alone.includes(f));
const run = (list, concurrency) => spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...options, ...list],
  { cwd: root, stdio: 'inherit' }).status ?? 1;
let status = shared.length > 0 ? run(shared, 2) : 0;
if (alone.length > 0) {
  console.log(`\n# run alone (they take the whole machine): ${alone.map((f) => relative(dir, f)).join(', ')}`);
  status = run(alone, 1) || status;
}

const show = (list) => list.slice(0, 20).map((c) => `  ${c}`).join('\n') + (list.length > 20 ? `\n  ... ${list.length - 20} more` : '');
const inputChanges = changes(inputs, fingerprint(root, INPUTS));
if (inputChanges.length > 0) console.error(`\nwarning: the build's inputs changed during the tests (the next npm test or npm start rebuilds):\n${show(inputChanges)}`);
const buildChanges = changes(build, fingerprint(root, ['build']));
if (buildChanges.length > 0) {
  console.error(`\nfailed: build/ changed while the tests ran from it (no test may rebuild or write there):\n${show(buildChanges)}`);
  process.exit(1);
}
process.exit(status);

#!/usr/bin/env node
// Runs every compiled test file (build/dist/test/**/*.test.js) with node's test runner.
// Extra arguments are substrings that select test files, e.g. `npm test -- radix`; those starting
// with `-` go to node's test runner, e.g. `npm test -- --test-reporter=spec`.
import { spawnSync } from 'node:child_process';
import { readdirSync, existsSync } from 'node:fs';
import { join, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'build/dist/test');
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
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...options, ...chosen], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);

#!/usr/bin/env node
// Runs the compiled benchmarks (build/dist/bench/*.bench.js) one after another.
// `npm run bench -- index` runs only files whose name contains "index"; other args pass through.
import { spawnSync } from 'node:child_process';
import { readdirSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'build/dist/bench');
const args = process.argv.slice(2);
const names = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.bench.js')).sort() : [];
const filters = args.filter((a) => !a.startsWith('-') && !a.includes('/') && !a.includes('.'));
const pass = args.filter((a) => !filters.includes(a));
const chosen = names.filter((n) => filters.length === 0 || filters.some((f) => n.includes(f)));
let status = 0;
for (const n of chosen) {
  console.log(`\n## ${n}\n`);
  const r = spawnSync(process.execPath, [join(dir, n), ...pass], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) status = r.status ?? 1;
}
process.exit(status);

#!/usr/bin/env node
// Runs the compiled benchmarks (build/dist/bench/*.bench.js) one after another.
// `npm run bench -- index` runs only files whose name contains "index" (or the one bench named
// exactly "index"); other args pass through.
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
// a filter that is a bench's whole name picks that bench alone ("ray" is not also "ray-routing")
const picks = (f, n) => (names.includes(`${f}.bench.js`) ? n === `${f}.bench.js` : n.includes(f));
const chosen = names.filter((n) => filters.length === 0 || filters.some((f) => picks(f, n)));
let status = 0;
for (const n of chosen) {
  console.log(`\n## ${n}\n`);
  const r = spawnSync(process.execPath, [join(dir, n), ...pass], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) status = r.status ?? 1;
}
process.exit(status);

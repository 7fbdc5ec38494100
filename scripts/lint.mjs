#!/usr/bin/env node
// Project rules that a generic linter does not know (STYLE.md habits 2, 5 and 6):
// - src/core and src/sim import no `node:` module (they run in a browser);
// - only src/core/index/wasm.ts touches `WebAssembly` or `memory.buffer`, and only it names a
//   scratch region or parameter cell of assembly/layout.ts (`R_*`, `P_*`): everything else
//   writes scratch through its typed writers, so no other file computes an offset into it;
// - only src/service/env.ts reads `process.env`;
// - no import cycle in src/, and no import across a forbidden arrow (scripts/import-graph.mjs).
// A small script of our own rather than madge or dependency-cruiser: the rules are a dozen lines,
// and the graph of relative ES imports needs no TypeScript resolver.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cycles, forbiddenArrows, importGraph } from './import-graph.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const problems = [];
function walk(d, out = []) {
  for (const e of readdirSync(d)) {
    const p = join(d, e);
    if (statSync(p).isDirectory()) walk(p, out); else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}
for (const file of walk(join(root, 'src'))) {
  const rel = relative(root, file);
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const at = `${rel}:${i + 1}`;
    if ((rel.startsWith('src/core/') || rel.startsWith('src/sim/')) && /from\s+['"]node:|require\(['"]node:|import\(['"]node:/.test(line)) {
      problems.push(`${at}: isomorphic module imports a node: module`);
    }
    if (rel !== 'src/core/index/wasm.ts' && /\bWebAssembly\.|memory\.buffer/.test(line) && !/^\s*(\*|\/\/)/.test(line)) {
      problems.push(`${at}: only src/core/index/wasm.ts may touch WebAssembly or memory.buffer`);
    }
    if (rel !== 'src/core/index/wasm.ts' && /\b[RP]_[A-Z][A-Z0-9_]*\b/.test(line) && !/^\s*(\*|\/\/)/.test(line)) {
      problems.push(`${at}: only src/core/index/wasm.ts may name a scratch region or parameter cell (R_*, P_*)`);
    }
    if (rel !== 'src/service/env.ts' && /process\.env/.test(line) && !/^\s*(\*|\/\/)/.test(line)) {
      problems.push(`${at}: only src/service/env.ts may read process.env`);
    }
  });
}
const graph = importGraph(root);
for (const c of cycles(graph)) problems.push(`import cycle: ${c.join(' <-> ')}`);
for (const a of forbiddenArrows(graph)) problems.push(`forbidden import: ${a}`);
if (problems.length) { console.error(problems.join('\n')); process.exit(1); }
console.log('lint: ok');

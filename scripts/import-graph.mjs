// The import graph of src/ (every `import`/`export ... from` and `import()` of a relative module,
// type-only ones included), its cycles, and the layering rules of the design:
// core imports nothing of service, http, cli or sim; service imports nothing of http; sim
// imports nothing of service or http; nothing in src imports test/ or bench/.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, dirname, resolve } from 'node:path';

const SPEC = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** Files (root-relative, `/`-separated) -> the root-relative files they import. */
export function importGraph(root, dir = 'src') {
  const graph = new Map();
  const walk = (d) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) {
        const from = relative(root, p).split('\\').join('/');
        const text = readFileSync(p, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
        const to = new Set();
        for (const m of text.matchAll(SPEC)) {
          to.add(relative(root, resolve(dirname(p), m[1].replace(/\.js$/, '.ts'))).split('\\').join('/'));
        }
        graph.set(from, [...to].sort());
      }
    }
  };
  walk(join(root, dir));
  return graph;
}

/** Every cycle as a list of files (Tarjan's strongly connected components of size > 1, or a self-import). */
export function cycles(graph) {
  let index = 0;
  const idx = new Map(), low = new Map(), stack = [], on = new Set(), out = [];
  const visit = (v) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do { w = stack.pop(); on.delete(w); comp.push(w); } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

export const layer = (f) => {
  if (f.startsWith('src/generated/') || f === 'src/version.ts') return 'shared'; // build outputs and constants any layer reads
  if (f.startsWith('src/core/')) return 'core';
  if (f.startsWith('src/service/')) return 'service';
  if (f.startsWith('src/http/')) return 'http';
  if (f.startsWith('src/sim/')) return 'sim';
  if (/^src\/(cli|cli-args|server|simulate-cli|simulate-serve)\.ts$/.test(f)) return 'cli';
  if (f.startsWith('src/')) return 'entry';
  return f.split('/')[0]; // test, bench, web, ...
};

/** What each layer may not import. */
export const FORBIDDEN = Object.freeze({
  core: ['service', 'http', 'cli', 'sim', 'entry', 'test', 'bench'],
  service: ['http', 'cli', 'sim', 'entry', 'test', 'bench'],
  sim: ['service', 'http', 'cli', 'entry', 'test', 'bench'],
  http: ['cli', 'sim', 'entry', 'test', 'bench'],
  cli: ['test', 'bench'],
  entry: ['test', 'bench', 'cli'],
});

/** Every import that crosses a forbidden arrow, as `from -> to`. */
export function forbiddenArrows(graph) {
  const out = [];
  for (const [from, tos] of graph) {
    const banned = FORBIDDEN[layer(from)] ?? [];
    for (const to of tos) if (banned.includes(layer(to))) out.push(`${from} -> ${to} (${layer(from)} may not import ${layer(to)})`);
  }
  return out;
}

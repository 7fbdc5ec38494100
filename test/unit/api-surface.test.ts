/**
 * The package's public API is explicit: the names each entry point exports (values at run time,
 * types in the entry's source) are exactly the lists in docs/embedding.md's "What each entry
 * point exports", so nothing becomes API by accident and the documentation cannot drift.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// compiled to build/dist/test/unit/: four levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');

interface Listed { values: string[]; types: string[] }

/** The documented lists, per entry (`select-service`, `select-service/core`, `select-service/browser`). */
function readmeLists(): Map<string, Listed> {
  const text = readFileSync(join(root, 'docs/embedding.md'), 'utf8');
  const at = text.indexOf('## What each entry point exports');
  assert.ok(at >= 0, 'docs/embedding.md has the section');
  const section = text.slice(at).split(/\n## /)[0];
  const out = new Map<string, Listed>();
  let current: Listed | null = null;
  let kind: 'values' | 'types' | null = null;
  for (const line of section.split('\n')) {
    const head = /^`(select-service[^`]*)`/.exec(line);
    if (head) { current = { values: [], types: [] }; out.set(head[1], current); kind = null; continue; }
    const item = /^- (values|types):/.exec(line);
    if (item) kind = item[1] as 'values' | 'types';
    else if (!/^\s+`/.test(line)) kind = null;
    if (current && kind) for (const m of line.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)) current[kind].push(m[1]);
  }
  return out;
}

/** Type names an entry file exports with `export type { ... }`. */
function typeExports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const names: string[] = [];
  for (const m of text.matchAll(/export type \{([^}]*)\}/g)) names.push(...m[1].split(',').map((s) => s.trim()).filter(Boolean));
  return names;
}

const sorted = (a: Iterable<string>): string[] => [...a].sort();

test('each entry point exports exactly what docs/embedding.md lists', async () => {
  const lists = readmeLists();
  const core = lists.get('select-service/core'), node = lists.get('select-service'), browser = lists.get('select-service/browser');
  assert.ok(core && node && browser, 'the three entries are documented');
  assert.ok(core.values.length > 20 && core.types.length > 40, 'the lists were read');

  const runtime = async (rel: string): Promise<string[]> => sorted(Object.keys(await import(pathToFileURL(join(root, rel)).href) as object));
  assert.deepEqual(await runtime('build/dist/src/core/index.js'), sorted(core.values));
  assert.deepEqual(await runtime('build/dist/src/index.js'), sorted([...core.values, ...node.values]));
  assert.deepEqual(await runtime('build/dist/src/browser.js'), sorted([...core.values, ...browser.values]));
  // the bundled browser module is the same surface
  assert.deepEqual(await runtime('build/browser/select-service.js'), sorted([...core.values, ...browser.values]));

  assert.deepEqual(sorted(typeExports('src/core/index.ts')), sorted(core.types));
  assert.deepEqual(sorted(typeExports('src/index.ts')), sorted(node.types));
  assert.deepEqual(sorted(typeExports('src/browser.ts')), sorted(browser.types));
  for (const f of ['src/index.ts', 'src/browser.ts']) {
    const stars = [...readFileSync(join(root, f), 'utf8').matchAll(/export \* from '([^']+)'/g)].map((m) => m[1]);
    assert.deepEqual(stars, ['./core/index.js'], `${f} re-exports only the core whole`);
  }
  assert.doesNotMatch(readFileSync(join(root, 'src/core/index.ts'), 'utf8'), /export \*/, 'the core lists every name');
});

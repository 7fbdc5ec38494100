/**
 * The layering rules `npm run lint` enforces (scripts/import-graph.mjs): no import cycle in src/,
 * and no import across a forbidden arrow. Checked on the real tree, and on a small tree that
 * breaks each rule so the checker is known to catch it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// compiled to build/dist/test/unit/lint/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
interface GraphModule {
  importGraph(root: string, dir?: string): Map<string, string[]>;
  cycles(g: Map<string, string[]>): string[][];
  forbiddenArrows(g: Map<string, string[]>): string[];
}
const load = async (): Promise<GraphModule> => import(pathToFileURL(join(root, 'scripts/import-graph.mjs')).href) as Promise<GraphModule>;

test('src/ has no import cycle and no forbidden arrow', async () => {
  const g = await load();
  const graph = g.importGraph(root);
  assert.ok(graph.size > 50, 'the whole of src/ is read');
  assert.ok((graph.get('src/core/core.ts') ?? []).includes('src/core/catalog/worker-catalog.ts'), 'imports are resolved to files');
  assert.deepEqual(g.cycles(graph), []);
  assert.deepEqual(g.forbiddenArrows(graph), []);
});

test('the checker catches a cycle (type-only imports count) and each forbidden arrow', async (t) => {
  const g = await load();
  const dir = mkdtempSync(join(tmpdir(), 'import-graph-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (rel: string, text: string): void => { mkdirSync(dirname(join(dir, rel)), { recursive: true }); writeFileSync(join(dir, rel), text); };
  file('src/core/a.ts', "import type { B } from './b.js';\nexport type A = B;\n");
  file('src/core/b.ts', "import { a } from './c/a2.js';\nexport type B = number;\n");
  file('src/core/c/a2.ts', "export { x as a } from '../a.js';\n");
  file('src/core/d.ts', "import { s } from '../service/s.js';\n// import { h } from '../http/h.js';\n");
  file('src/service/s.ts', "export const s = await import('../http/h.js');\n");
  file('src/sim/m.ts', "import '../service/s.js';\n");
  file('src/http/h.ts', 'export const h = 1;\n');
  const graph = g.importGraph(dir);
  assert.deepEqual(g.cycles(graph), [['src/core/a.ts', 'src/core/b.ts', 'src/core/c/a2.ts']]);
  assert.deepEqual(g.forbiddenArrows(graph).map((a) => a.split(' (')[0]).sort(), [
    'src/core/d.ts -> src/service/s.ts', 'src/service/s.ts -> src/http/h.ts', 'src/sim/m.ts -> src/service/s.ts',
  ]);
});

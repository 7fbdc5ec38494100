/**
 * The README and docs/ stand alone: a reader has the repository only, so they point at nothing
 * outside it (no `../` paths, no section numbers of documents that are not here), and every
 * relative link they make resolves to a file of the repository. The API reference's route list follows
 * the route table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALL_ROUTES } from '../../src/http/app.js';

// compiled to build/dist/test/unit/: four levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

test('README.md and docs/*.md refer to nothing outside the repository', () => {
  for (const file of docs) {
    const text = readFileSync(join(root, file), 'utf8');
    assert.doesNotMatch(text, /\.\.\/shared|§/, `${file}: no pointer into documents a reader does not have`);
    for (const m of text.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/.test(target)) continue; // a URL
      assert.ok(!target.startsWith('../') || file.startsWith('docs/'), `${file}: ${target} leaves the repository`);
      assert.ok(existsSync(join(root, dirname(file), target)), `${file}: link ${target} resolves`);
    }
  }
});

test('the API reference\'s route table lists every route of the route table with its success status', () => {
  const text = readFileSync(join(root, 'docs/api.md'), 'utf8');
  const section = text.slice(text.indexOf('## Routes at a glance')).split(/\n## /)[0];
  for (const def of ALL_ROUTES) {
    const row = section.split('\n').find((l) => l.startsWith(`| \`${def.method} ${def.url.replace(/:(\w+)/g, '{$1}')}`));
    assert.ok(row, `${def.method} ${def.url} is listed`);
    assert.match(row!.split('|')[2], new RegExp(`\\b${def.status}\\b`), `${def.method} ${def.url}: ${def.status}`);
  }
});

test('code, tests, benches and READMEs cite public sources, not notes outside the repository', () => {
  const skip = new Set(['node_modules', 'build', '.git']);
  const bad: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      if (skip.has(e.name)) continue;
      const rel = dir ? `${dir}/${e.name}` : e.name;
      if (e.isDirectory()) { walk(rel); continue; }
      if (!/\.(ts|mjs|js|md|py|ya?ml)$/.test(e.name) || rel === 'test/unit/readme.test.ts') continue;
      const text = readFileSync(join(root, rel), 'utf8');
      const lines = text.split('\n');
      lines.forEach((line, i) => { if (/\.\.\/shared\/|§/.test(line)) bad.push(`${rel}:${i + 1}: ${line.trim().slice(0, 100)}`); });
    }
  };
  for (const dir of ['src', 'assembly', 'test', 'bench', 'scripts', 'docs', 'clients', 'deploy', 'web', 'examples']) {
    if (existsSync(join(root, dir))) walk(dir);
  }
  assert.deepEqual(bad, [], 'no section numbers of documents a reader does not have, no ../shared paths');
});

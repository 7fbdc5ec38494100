/**
 * A copy of the project tree in a temporary folder, for tests that run commands as the README
 * writes them. `npm start` runs `scripts/build.mjs --if-stale` first, which rebuilds build/ when
 * any of its inputs looks newer than the build; in the real tree that would replace files other
 * tests are running from (it did: a CLI test failed with `Cannot find module
 * build/dist/src/cli.js`). In the copy, whatever it builds, it builds there. The copy keeps
 * modification times, so a build that is current in the tree is current in the copy and nothing
 * is rebuilt; node_modules is a link to the tree's.
 */
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What the README's commands and scripts/build.mjs read. */
export const TREE_ENTRIES: readonly string[] = [
  'package.json', 'package-lock.json', 'tsconfig.json', 'asconfig.json', 'README.md',
  'scripts', 'src', 'test', 'bench', 'web', 'assembly', 'docs', 'build',
];

export interface TreeCopy { readonly dir: string; remove(): Promise<void> }

/** Copies {@link TREE_ENTRIES} of `root` (timestamps kept) into a new temporary folder, with a node_modules link. */
export async function copyTree(root: string): Promise<TreeCopy> {
  const dir = await mkdtemp(join(tmpdir(), 'tree-copy-'));
  for (const entry of TREE_ENTRIES) {
    if (existsSync(join(root, entry))) await cp(join(root, entry), join(dir, entry), { recursive: true, preserveTimestamps: true });
  }
  await symlink(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

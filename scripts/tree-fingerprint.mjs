// What a folder holds, file by file (path -> size and modification time), and what changed
// between two such fingerprints. scripts/test.mjs takes one of build/ before the suite and one
// after: a test that rebuilt or wrote into build/ while other tests ran from it fails the run.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** `relative path -> "size:mtimeMs"` of every file under each of `paths` (files or folders) below `root`. */
export function fingerprint(root, paths) {
  const out = new Map();
  const walk = (p) => {
    if (!existsSync(p)) return;
    const st = statSync(p);
    if (!st.isDirectory()) { out.set(relative(root, p), `${st.size}:${st.mtimeMs}`); return; }
    for (const e of readdirSync(p)) walk(join(p, e));
  };
  for (const p of paths) walk(join(root, p));
  return out;
}

/** The paths added, removed or modified between two fingerprints, sorted, each with what happened. */
export function changes(before, after) {
  const out = [];
  for (const [path, sig] of after) {
    if (!before.has(path)) out.push(`added ${path}`);
    else if (before.get(path) !== sig) out.push(`modified ${path}`);
  }
  for (const path of before.keys()) if (!after.has(path)) out.push(`removed ${path}`);
  return out.sort((a, b) => a.slice(a.indexOf(' ')).localeCompare(b.slice(b.indexOf(' '))));
}

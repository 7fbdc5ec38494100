/**
 * Where the Deno and Bun binaries of the `deno` and `bun` devDependencies are, without relying on
 * their postinstall scripts (npm may not run them: `--ignore-scripts`, or an `allowScripts`
 * policy). Both ship the binary in an npm platform package that npm installs for this machine only
 * (`@deno/linux-x64-glibc/deno`, `@oven/bun-linux-x64/bin/bun`, ...); the postinstall scripts
 * only link it elsewhere (deno: `deno/deno`; bun moves it to `bun/bin/bun.exe`, leaving the
 * platform package's copy gone). Each candidate is probed with `--version`; the first that runs
 * wins, else the reason why none did.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export type Found = { ok: true; path: string; version: string } | { ok: false; reason: string };

const exe = process.platform === 'win32' ? '.exe' : '';

/** Files under `node_modules/<scope>/*` at `rel` (the platform packages npm installed here). */
function platformBinaries(root: string, scope: string, rel: string): string[] {
  const dir = join(root, 'node_modules', scope);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).map((p) => join(dir, p, rel)).filter((f) => existsSync(f));
}

/** The first candidate that answers `--version`, or why none did. */
function probe(name: string, candidates: string[]): Found {
  const tried: string[] = [];
  for (const path of candidates) {
    // bun's placeholder before its postinstall is a small script that fails: skip it by size
    if (path.includes('/') && !existsSync(path)) { tried.push(`${path} (missing)`); continue; }
    if (path.includes('/') && statSync(path).size < 1_000_000) { tried.push(`${path} (not a binary)`); continue; }
    const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' } });
    if (r.status === 0) return { ok: true, path, version: r.stdout.trim().split('\n')[0] };
    tried.push(`${path} (${r.error?.message ?? `exit ${r.status}: ${r.stderr.trim().split('\n')[0]}`})`);
  }
  return { ok: false, reason: `${name} not found: ${tried.length ? `tried ${tried.join(', ')}` : 'no candidate'} (npm ci installs it as a devDependency)` };
}

/** Deno: the platform package's binary, then the postinstall's link, then the PATH. */
export function findDeno(root: string): Found {
  return probe('deno', [...platformBinaries(root, '@deno', `deno${exe}`), join(root, 'node_modules/deno', `deno${exe}`), 'deno']);
}

/** Bun: the platform package's binary, then where the postinstall moved it, then the PATH. */
export function findBun(root: string): Found {
  return probe('bun', [...platformBinaries(root, '@oven', `bin/bun${exe}`), join(root, 'node_modules/bun/bin/bun.exe'), 'bun']);
}

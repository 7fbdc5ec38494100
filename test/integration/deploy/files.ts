/**
 * What the deploy tests read from the repository: its files, the Dockerfile (instructions per
 * stage, with line continuations joined) and the CLI's flags and defaults (its `--help`).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI } from '../../support/service-process.js';

// compiled to build/dist/test/integration/deploy/: five levels up is the project root
export const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');

export const readRepoFile = (path: string): string => readFileSync(join(root, path), 'utf8');

/** One Dockerfile instruction; `stage` counts FROMs (0 = before the first). */
export interface Instruction { op: string; args: string; stage: number }

export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let stage = 0;
  const logical = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  for (const raw of logical) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+)\s*(.*)$/.exec(line)!;
    const op = m[1].toUpperCase();
    if (op === 'FROM') stage++;
    out.push({ op, args: m[2].replace(/\s+/g, ' ').trim(), stage });
  }
  return out;
}

/** The exec form (`["a", "b"]`) of an instruction's arguments. */
export function execForm(args: string): string[] {
  const v: unknown = JSON.parse(args);
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw new Error(`not an exec form: ${args}`);
  return v;
}

/** A flag of `select-service --help`: whether it takes a value, and its `[default: X]`. */
export interface CliFlag { takesValue: boolean; default: string | null }

/** Every flag `select-service --help` lists. */
export function cliFlags(): Map<string, CliFlag> {
  const r = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`--help failed: ${r.stderr}`);
  const flags = new Map<string, CliFlag>();
  // a flag's help wraps onto indented continuation lines (at 100 columns): join them to the flag's line
  const entries: string[] = [];
  for (const line of r.stdout.split('\n')) {
    if (/^ {4,}\S/.test(line) && entries.length > 0) entries[entries.length - 1] += ` ${line.trim()}`;
    else entries.push(line);
  }
  for (const line of entries) {
    const m = /^\s+(--[a-z0-9-]+)( [A-Z][A-Z_]*)?\s.*?(?:\[default: ([^\]]+)\])?(?: \[env: [A-Z_]+\])?$/.exec(line);
    if (m) flags.set(m[1], { takesValue: m[2] !== undefined, default: m[3] ?? null });
  }
  return flags;
}

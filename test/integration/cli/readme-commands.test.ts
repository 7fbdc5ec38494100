/**
 * The README's commands work from a clone, as a newcomer types them: the quick start is run as
 * written (its start command, then its curl block against that service, every response checked
 * against the output its comment shows), the "Running it from a clone" block is run, and every
 * shell line of README.md and docs/*.md names something a clone has (no `select-service` command,
 * which is not on the PATH there; `node <file>` files that exist after the build; npm scripts,
 * test filters and bench names that exist; flags the CLI accepts).
 *
 * The commands run in a copy of the tree (test/support/tree-copy.ts): `npm start` builds first
 * when it finds the build stale, and must never rebuild the build/ other tests are running from.
 */
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCliArgs } from '../../../src/cli-args.js';
import { parseJson } from '../../../src/core/wire/json.js';
import { runProcess, serviceFreeEnv } from '../../support/run-process.js';
import { copyTree, type TreeCopy } from '../../support/tree-copy.js';

// compiled to build/dist/test/integration/cli/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** Where the README's commands run: one copy of the tree for this file's tests, made on first use. */
let copy: Promise<TreeCopy> | null = null;
const tree = async (): Promise<string> => (await (copy ??= copyTree(root))).dir;
after(async () => { if (copy) await (await copy).remove(); });

interface ShellLine { file: string; heading: string; text: string }

/** Logical lines (continuations joined, comment-only and blank lines dropped) of each ```sh block, per heading. */
function shellLines(file: string): ShellLine[] {
  const out: ShellLine[] = [];
  let heading = '';
  let inSh = false;
  let pending = '';
  for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
    if (!inSh && /^#+ /.test(line)) heading = line.replace(/^#+ /, '');
    if (/^```/.test(line)) { inSh = !inSh && /^```(sh|bash)\s*$/.test(line); continue; }
    if (!inSh) continue;
    const joined = pending + line;
    if (/\\$/.test(line)) { pending = joined.slice(0, -1) + ' '; continue; }
    pending = '';
    if (joined.trim() === '' || /^\s*#/.test(joined)) continue;
    out.push({ file, heading, text: joined });
  }
  return out;
}

/** The shell words of a simple command line, without leading VAR=value assignments, up to a comment or pipe. */
function words(text: string): string[] {
  const ws: string[] = [];
  for (const m of text.matchAll(/'[^']*'|"(?:[^"\\]|\\.)*"|[^\s'"]+/g)) {
    const w = m[0];
    if (w.startsWith('#') || w === '|' || w === '&&' || w === ';') break;
    if (/^\d*[<>]/.test(w)) continue; // a redirection
    ws.push(w.replace(/^'(.*)'$/, '$1').replace(/^"(.*)"$/, '$1'));
  }
  while (ws.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(ws[0])) ws.shift();
  return ws;
}

/** The blocks of the README section `heading`, as lines. */
function sectionLines(heading: string): ShellLine[] {
  const lines = shellLines('README.md').filter((l) => l.heading === heading);
  assert.ok(lines.length > 0, `the README has shell commands under "${heading}"`);
  return lines;
}

interface Served { port: number; output(): string; stop(): Promise<void> }

/**
 * Runs a command line that serves, in its own process group, and resolves once it logs
 * `select-service listening`. The port comes from SELECT_SERVICE_PORT=0 (the command is run as
 * written) unless `port0` rewrites a `--port N` in it.
 */
async function serve(t: TestContext, command: string): Promise<Served> {
  const child: ChildProcess = spawn('bash', ['-c', command], {
    cwd: await tree(), detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: serviceFreeEnv({ SELECT_SERVICE_PORT: '0', SELECT_SERVICE_HOST: '127.0.0.1' }),
  });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    try { process.kill(-child.pid!, 'SIGTERM'); } catch { /* already gone */ }
    const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 10_000);
    await exited;
    clearTimeout(timer);
  };
  t.after(stop);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`"${command}" did not listen within 120 s:\n${out}`)), 120_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /"port":(\d+)[^\n]*"msg":"select-service listening"/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve({ port: Number(m[1]), output: () => out, stop });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then(() => { clearTimeout(timer); reject(new Error(`"${command}" exited before listening:\n${out}`)); });
  });
}

/** The response text a line's trailing comment shows (from its first `{` or `"`), split at `...`. */
function claimedFragments(line: string): string[] {
  const comment = /\s#\s(.*)$/.exec(line.replace(/'[^']*'/g, "''"));
  if (!comment) return [];
  const at = comment[1].search(/[{"]/);
  if (at < 0) return [];
  return comment[1].slice(at).split('...').map((f) => f.trim()).filter((f) => f !== '' && f !== ',');
}

test('every shell line of the README and docs/ names something a clone has', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const testFiles: string[] = [];
  (function walk(d: string): void {
    for (const e of readdirSync(join(root, d), { withFileTypes: true })) {
      if (e.isDirectory()) walk(`${d}/${e.name}`);
      else if (e.name.endsWith('.test.ts')) testFiles.push(`${d}/${e.name}`);
    }
  })('test');
  const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const problems: string[] = [];
  let checked = 0;
  for (const file of files) {
    for (const line of shellLines(file)) {
      const w = words(line.text);
      if (w.length === 0) continue;
      checked++;
      const where = `${file} (${line.heading}): ${line.text.trim().slice(0, 90)}`;
      if (w[0] === 'select-service') problems.push(`${where}: select-service is not on the PATH in a clone`);
      if (w[0] === 'node' && w[1] && !w[1].startsWith('-')) {
        if (!existsSync(join(root, w[1]))) problems.push(`${where}: ${w[1]} does not exist after npm run build`);
        if (w[1] === 'build/dist/src/cli.js' && w[2] !== 'simulate') {
          try { parseCliArgs(w.slice(2).filter((a) => !a.startsWith('$')), {}); } catch (e) { problems.push(`${where}: ${(e as Error).message}`); }
        }
      }
      if (w[0] === 'npm' && w[1] === 'run' && w[2] && !(w[2] in pkg.scripts)) problems.push(`${where}: no npm script ${w[2]}`);
      const dash = w.indexOf('--');
      if (w[0] === 'npm' && dash > 0 && w[dash + 1] && !w[dash + 1].startsWith('-')) {
        const arg = w[dash + 1];
        if (w[1] === 'test' && !testFiles.some((f) => f.includes(arg))) problems.push(`${where}: no test file matches ${arg}`);
        if (w[1] === 'run' && w[2] === 'bench' && !existsSync(join(root, `bench/${arg}.bench.ts`))) problems.push(`${where}: no bench/${arg}.bench.ts`);
      }
    }
  }
  assert.ok(checked > 20, `the docs hold shell commands (${checked} checked)`);
  assert.deepEqual(problems, []);
});

test('the README quick start works as written: start without engines, then every curl answers what its comment shows', { timeout: 240_000 }, async (t) => {
  const [start, ...calls] = sectionLines('Quick start, without engines');
  assert.match(start.text, /npm start/, 'the first command starts the service');
  const service = await serve(t, start.text);
  const base = `127.0.0.1:${service.port}`;
  const script = ['set -euo pipefail', 'curl() { command curl --fail-with-body --max-time 30 "$@"; }'];
  calls.forEach((l, i) => script.push(`printf '\\n@@%d\\n' ${i}`, l.text.replaceAll('localhost:8092', base)));
  const r = await runProcess('bash', ['-c', script.join('\n')], await tree(), 120_000, serviceFreeEnv());
  assert.equal(r.code, 0, `the quick start's commands all succeed:\n${r.stdout}\n${r.stderr}`);
  const outputs = new Map<number, string>();
  for (const part of r.stdout.split(/\n@@/).slice(1)) {
    const nl = part.indexOf('\n');
    outputs.set(Number(part.slice(0, nl)), part.slice(nl + 1).trim());
  }
  let claims = 0;
  calls.forEach((l, i) => {
    const got = outputs.get(i) ?? '';
    let from = 0;
    for (const f of claimedFragments(l.text)) {
      const at = got.indexOf(f, from);
      assert.ok(at >= 0, `"${l.text.trim().slice(0, 70)}" answers ${f} (got ${got.slice(0, 300)})`);
      from = at + f.length;
      claims++;
    }
  });
  assert.ok(claims >= 5, 'the comments show responses');
  // The claim the block ends on: the same prompt goes to the worker the booking went to.
  const booked = calls.findIndex((l) => l.text.includes('/select_and_reserve'));
  const again = calls.findIndex((l, i) => i > booked && /\/select\s/.test(l.text));
  assert.ok(booked >= 0 && again > booked, 'a booking, then a select of the same prompt');
  const first = parseJson(outputs.get(booked)!) as { worker_id: number };
  const second = parseJson(outputs.get(again)!) as { worker_id: number; overlap: { longest_matched: number } };
  assert.equal(second.worker_id, first.worker_id, 'the cached prefix keeps the prompt on its worker');
  assert.ok(second.overlap.longest_matched > 0);
  const loud = service.output().split('\n').filter((s) => /"level":(4|5|6)\d/.test(s));
  assert.deepEqual(loud, [], 'the quick start logs no warning or error');
});

test('the README\'s start command and its "from a clone" commands run', { timeout: 240_000 }, async (t) => {
  const plain = readme.split('\n').find((s) => /^npm ci && npm start\b/.test(s));
  assert.ok(plain, 'the README starts with `npm ci && npm start`');
  const first = await serve(t, 'npm start');
  const health = await fetch(`http://127.0.0.1:${first.port}/health`);
  assert.equal(health.status, 200, 'npm start with built-in defaults serves /health');
  await first.stop();
  for (const line of sectionLines('Running it from a clone')) {
    const cmd = line.text.replace(/\s#\s.*$/, '');
    if (/--help|simulate/.test(cmd)) {
      const r = await runProcess('bash', ['-c', cmd], await tree(), 120_000, serviceFreeEnv());
      assert.equal(r.code, 0, `${cmd}:\n${r.stderr}`);
      assert.ok(r.stdout.length > 100, `${cmd} prints its answer`);
    } else {
      // a command that serves: run it on a free port instead of the one it names, stop it once it listens
      const s = await serve(t, cmd.replace(/--port \d+/, '--port 0'));
      assert.ok(s.port > 0, cmd);
      await s.stop();
    }
  }
});

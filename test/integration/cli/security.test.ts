/**
 * The protections of issue 15 through the real `select-service` binary: `--auth-token-file` (or
 * its environment variable) with SIGHUP re-reading, `--allowed-endpoints`, the capacity flags, and
 * start-up refusals that exit 2 naming the flag.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, startService } from '../../support/service-process.js';
import { eventually } from '../../support/ports.js';

test('the binary authenticates with --auth-token-file, re-reads it on SIGHUP, and refuses outside --allowed-endpoints', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tokens');
  writeFileSync(file, 'first-token\n');
  const p = await startService(['--auth-token-file', file, '--allowed-endpoints', '10.0.0.0/8', '--max-bookings', '1']);
  t.after(() => p.kill());
  const call = async (method: string, path: string, token?: string, body?: unknown) => {
    const res = await fetch(p.url + path, {
      method, body: body === undefined ? undefined : JSON.stringify(body),
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    });
    return { status: res.status, text: await res.text() };
  };
  assert.equal((await call('GET', '/health')).status, 200);
  assert.equal((await call('GET', '/ready')).status, 503, 'not ready, but answered without a token');
  assert.equal((await call('GET', '/workers')).status, 401);
  assert.equal((await call('GET', '/workers', 'first-token')).status, 200);
  const w = { worker_id: 1, model_name: 'm', endpoint: 'http://w:1', block_size: 4, kv_events_endpoint: 'tcp://192.168.0.9:5557' };
  const refused = await call('POST', '/workers', 'first-token', w);
  assert.equal(refused.status, 422);
  assert.match(refused.text, /is not in --allowed-endpoints/);
  assert.equal((await call('POST', '/workers', 'first-token', { ...w, kv_events_endpoint: 'tcp://10.0.0.9:5557' })).status, 201);
  assert.equal((await call('POST', '/select_and_reserve', 'first-token', { model_name: 'm', selection_id: 'a', token_ids: [1, 2, 3, 4] })).status, 200);
  const capped = await call('POST', '/select_and_reserve', 'first-token', { model_name: 'm', selection_id: 'b', token_ids: [1, 2, 3, 4] });
  assert.equal(capped.status, 429);
  assert.match(capped.text, /live booking limit reached/);
  writeFileSync(file, 'second-token\n');
  p.child.kill('SIGHUP');
  await eventually(async () => (await call('GET', '/workers', 'second-token')).status === 200, 10000, 'the re-read token');
  assert.equal((await call('GET', '/workers', 'first-token')).status, 401);
  assert.doesNotMatch(p.output(), /first-token|second-token/, 'tokens are never logged');
});

test('the token file may come from SELECT_SERVICE_AUTH_TOKEN_FILE', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'tokens'), 'env-token\n');
  const p = await startService([], { SELECT_SERVICE_AUTH_TOKEN_FILE: join(dir, 'tokens') });
  t.after(() => p.kill());
  assert.equal((await fetch(`${p.url}/workers`)).status, 401);
  assert.equal((await fetch(`${p.url}/workers`, { headers: { authorization: 'Bearer env-token' } })).status, 200);
});

test('an unusable token file, a bad allowlist or a limit out of range exits 2 naming the flag', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [CLI, '--port', '0', ...args], { encoding: 'utf8', env: { ...process.env, DYN_ROUTER_USE_KV_EVENTS: 'false' } });
  const cases: [string[], RegExp][] = [
    [['--auth-token-file', '/nonexistent/tokens'], /--auth-token-file: \/nonexistent\/tokens/],
    [['--allowed-endpoints', '10.0.0.0/40'], /--allowed-endpoints: "10.0.0.0\/40": not a CIDR block/],
    [['--max-partitions', '5000'], /--max-partitions: must be an integer between 1 and 4096/],
    [['--max-bookings', '0'], /--max-bookings: must be an integer between 1/],
  ];
  for (const [args, message] of cases) {
    const r = run(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});

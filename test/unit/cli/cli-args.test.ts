/** `select-service` flag parsing (api §4.1): syntax, defaults, every problem listed, config overrides, the README table. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, FLAGS, parseCliArgs, routerOverrides } from '../../../src/cli-args.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';

const problems = (argv: string[]): readonly string[] => {
  try { parseCliArgs(argv); } catch (e) { if (e instanceof CliError) return e.problems; throw e; }
  assert.fail(`accepted ${argv.join(' ')}`);
};

test('no arguments: 0.0.0.0:8092 with built-in defaults', () => {
  const o = parseCliArgs([]);
  assert.deepEqual([o.host, o.port, o.logLevel, o.replicaSyncPort, o.sessionAffinity, o.workersFile], ['0.0.0.0', 8092, 'info', null, null, null]);
  assert.deepEqual(o.selectionCache, {});
  assert.deepEqual(routerOverrides(o), {});
  assert.ok(Object.isFrozen(o));
});

test('--flag value and --flag=value; lists split on commas', () => {
  const o = parseCliArgs(['--port=0', '--host', '127.0.0.1', '--indexer-peers', 'http://a:8092, http://b:8092/', '--replica-sync-port=9092',
    '--replica-sync-peers', 'tcp://b:9092,ipc:///tmp/x', '--selection-cache-ttl-secs', '0.5', '--selection-cache-max-entries=10',
    '--selection-cache-max-bytes', '1024', '--session-affinity-ttl-secs', '60', '--session-affinity-mode', 'soft', '--log-level', 'debug',
    '--workers-file', '/etc/workers.json', '--threads', '8']);
  assert.equal(o.port, 0);
  assert.deepEqual(o.indexerPeers, ['http://a:8092', 'http://b:8092/']);
  assert.deepEqual([o.replicaSyncPort, o.replicaSyncPeers], [9092, ['tcp://b:9092', 'ipc:///tmp/x']]);
  assert.deepEqual(o.selectionCache, { ttlSecs: 0.5, maxEntries: 10, maxBytes: 1024 });
  assert.deepEqual(o.sessionAffinity, { ttlSecs: 60, mode: 'soft' });
  assert.deepEqual([o.logLevel, o.workersFile, o.threads], ['debug', '/etc/workers.json', 8]);
  assert.deepEqual(parseCliArgs(['--session-affinity-ttl-secs', '5']).sessionAffinity, { ttlSecs: 5, mode: 'hard' });
  assert.equal(parseCliArgs([]).kvFeedSilenceSecs, null);
  assert.equal(parseCliArgs(['--kv-feed-silence-secs', '2.5']).kvFeedSilenceSecs, 2.5);
});

test('--kv-feed-silence-secs must be a number greater than 0', () => {
  assert.deepEqual(problems(['--kv-feed-silence-secs', '0']), ['--kv-feed-silence-secs: must be greater than 0 (got "0")']);
  assert.match(problems(['--kv-feed-silence-secs=-1'])[0], /^--kv-feed-silence-secs: must be a number between 0 and/);
  assert.match(problems(['--kv-feed-silence-secs', 'soon'])[0], /^--kv-feed-silence-secs: must be a number/);
});

test('router flags override the environment through the config schema, which names the flag', () => {
  const env = { DYN_ROUTER_ASSUME_KV_REUSE: 'true', DYN_ROUTER_USE_KV_EVENTS: 'false' };
  assert.equal(parseRouterConfig(env, routerOverrides(parseCliArgs(['--no-router-assume-kv-reuse']))).routerAssumeKvReuse, false);
  assert.equal(parseRouterConfig({ DYN_ROUTER_ASSUME_KV_REUSE: 'false' }, routerOverrides(parseCliArgs(['--router-assume-kv-reuse']))).routerAssumeKvReuse, true);
  const keyed = routerOverrides(parseCliArgs(['--router-tracking-hash', 'keyed-xxh3-v1', '--router-tracking-key-file', '/k', '--router-tracking-key-id', 'e1']));
  const cfg = parseRouterConfig({}, keyed);
  assert.deepEqual([cfg.routerTrackingHash, cfg.routerTrackingKeyFile, cfg.routerTrackingKeyId], ['keyed-xxh3-v1', '/k', 'e1']);
  assert.throws(() => parseRouterConfig({}, routerOverrides(parseCliArgs(['--router-tracking-hash', 'keyed-xxh3-v1']))),
    /DYN_ROUTER_TRACKING_KEY_FILE: keyed-xxh3-v1 requires router_tracking_key_file/);
  assert.throws(() => parseRouterConfig({}, routerOverrides(parseCliArgs(['--router-tracking-hash', 'md5']))), /--router-tracking-hash: must be one of/);
});

test('every problem of a command line is listed, each naming its flag', () => {
  const p = problems(['--port', '65536', '--port', '1', 'extra', '-x', '--host', '--workers-file', '--help=yes', '--selection-cache-max-entries', '1.5',
    '--selection-cache-ttl-secs', '-1', '--indexer-peers', 'ftp://x', '--session-affinity-ttl-secs', 'soon']);
  assert.deepEqual(p, [
    '--port: given more than once',
    'unexpected argument "extra"',
    '-x: unknown option',
    '--host: needs a value (ADDR)',
    '--workers-file: needs a value (PATH)',
    '--help: takes no value',
    '--indexer-peers: not an http(s) URL: "ftp://x"',
    '--session-affinity-ttl-secs: must be a number between -9007199254740991 and 9007199254740991 (got "soon")',
    '--selection-cache-ttl-secs: must be a number between 0 and 9007199254740991 (got "-1")',
    '--selection-cache-max-entries: must be an integer between 0 and 9007199254740991 (got "1.5")',
  ]);
});

test('the README flag table names every flag', async () => {
  const readme = await readFile(join(dirname(fileURLToPath(import.meta.url)), '../../../../../README.md'), 'utf8');
  for (const f of FLAGS) assert.match(readme, new RegExp(`\\| \`${f.name}[ \`]|, \`${f.name}\`|/ \`${f.name}\``), f.name);
});

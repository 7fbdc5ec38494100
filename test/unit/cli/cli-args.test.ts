/** `select-service` flag parsing: syntax, defaults, every problem listed, config overrides, SELECT_SERVICE_* variables, the tables of docs/configuration.md. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, FLAGS, envMarkdown, envReference, flagEnv, parseCliArgs, routerOverrides, unknownEnvWarnings } from '../../../src/cli-args.js';
import { CONFIG_FIELDS, ENV_VARS, defaultRouterConfig, parseRouterConfig } from '../../../src/core/config/config.js';
import { editDistance } from '../../../src/core/config/config-env.js';

const problemsWith = (argv: string[], env: Record<string, string>): readonly string[] => {
  try { parseCliArgs(argv, env); } catch (e) { if (e instanceof CliError) return e.problems; throw e; }
  assert.fail(`accepted ${argv.join(' ')}`);
};
const problems = (argv: string[]): readonly string[] => problemsWith(argv, {});

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

test('--kv-events-turn-ms: a number of ms within 0.05-100, also from SELECT_SERVICE_KV_EVENTS_TURN_MS; unset by default', () => {
  assert.equal(parseCliArgs([]).kvEventsTurnMs, null);
  assert.equal(parseCliArgs(['--kv-events-turn-ms', '0.25']).kvEventsTurnMs, 0.25);
  assert.equal(parseCliArgs([], { SELECT_SERVICE_KV_EVENTS_TURN_MS: '0.5' }).kvEventsTurnMs, 0.5);
  assert.equal(parseCliArgs(['--kv-events-turn-ms=2'], { SELECT_SERVICE_KV_EVENTS_TURN_MS: '0.5' }).kvEventsTurnMs, 2);
  assert.match(problems(['--kv-events-turn-ms', '0'])[0], /^--kv-events-turn-ms: must be a number between 0.05 and 100 \(got "0"\)$/);
  assert.match(problems(['--kv-events-turn-ms', '101'])[0], /^--kv-events-turn-ms: must be a number between 0.05 and 100/);
  assert.match(problemsWith([], { SELECT_SERVICE_KV_EVENTS_TURN_MS: 'fast' })[0], /^SELECT_SERVICE_KV_EVENTS_TURN_MS: must be a number/);
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

test('the configuration guide\'s flag table names every flag', async () => {
  const readme = await readFile(join(dirname(fileURLToPath(import.meta.url)), '../../../../../docs/configuration.md'), 'utf8');
  for (const f of FLAGS) assert.match(readme, new RegExp(`\\| \`${f.name}[ \`]|, \`${f.name}\`|/ \`${f.name}\``), f.name);
});

test('SELECT_SERVICE_* variables stand in for flags with a value; the flag wins; problems name the variable', () => {
  const env = { SELECT_SERVICE_PORT: '9000', SELECT_SERVICE_HOST: '127.0.0.1', SELECT_SERVICE_LOG_LEVEL: 'debug', SELECT_SERVICE_WORKERS_FILE: '/w.json',
    SELECT_SERVICE_SESSION_AFFINITY_TTL_SECS: '60', SELECT_SERVICE_INDEXER_PEERS: 'http://a:1,http://b:2', SELECT_SERVICE_THREADS: '' };
  const o = parseCliArgs([], env);
  assert.deepEqual([o.port, o.host, o.logLevel, o.workersFile, o.sessionAffinity, o.indexerPeers, o.threads],
    [9000, '127.0.0.1', 'debug', '/w.json', { ttlSecs: 60, mode: 'hard' }, ['http://a:1', 'http://b:2'], null], 'an empty variable is unset');
  const flagWins = parseCliArgs(['--port', '0', '--log-level=warn'], env);
  assert.deepEqual([flagWins.port, flagWins.logLevel, flagWins.host], [0, 'warn', '127.0.0.1']);
  assert.deepEqual(problemsWith([], { SELECT_SERVICE_PORT: '70000', SELECT_SERVICE_SESSION_AFFINITY_MODE: 'soft', SELECT_SERVICE_LOG_LEVEL: 'loud' }), [
    'SELECT_SERVICE_SESSION_AFFINITY_MODE: requires --session-affinity-ttl-secs',
    'SELECT_SERVICE_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    'SELECT_SERVICE_PORT: must be an integer between 0 and 65535 (got "70000")',
  ]);
  assert.equal(parseCliArgs([], { SELECT_SERVICE_ROUTER_TRACKING_HASH: 'keyed-xxh3-v1', SELECT_SERVICE_HELP: '1' }).help, false,
    'router overrides and switches have no SELECT_SERVICE_ variable');
  assert.deepEqual(FLAGS.filter((f) => flagEnv(f) === null).map((f) => f.name),
    ['--router-assume-kv-reuse', '--no-router-assume-kv-reuse', '--router-tracking-hash', '--router-tracking-key-file', '--router-tracking-key-id',
      '--routing-policy', '--help', '--help-env', '--version'], 'router overrides read their own variable (SELECT_SERVICE_ROUTING_POLICY through the router configuration)');
});

test('unknown DYN_ROUTER_* and SELECT_SERVICE_* variables are named with the closest known one; known names (SELECT_SERVICE_ROUTING_POLICY, read by the router configuration, too) and aliases are not', () => {
  const env = { DYN_ROUTER_TEMPRATURE: '0.5', DYN_ROUTER_QUEUE_TRESHOLD: '1', SELECT_SERVICE_PROT: '1', DYN_ROUTER_TEMPERATURE: '0',
    DYN_USE_KV_EVENTS: 'true', DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT: '1', SELECT_SERVICE_PORT: '1', SELECT_SERVICE_ROUTING_POLICY: 'ttft', DYN_LOG: 'x', HOME: '/' };
  assert.deepEqual(unknownEnvWarnings(env), [
    { name: 'DYN_ROUTER_QUEUE_TRESHOLD', closest: 'DYN_ROUTER_QUEUE_THRESHOLD' },
    { name: 'DYN_ROUTER_TEMPRATURE', closest: 'DYN_ROUTER_TEMPERATURE' },
    { name: 'SELECT_SERVICE_PROT', closest: 'SELECT_SERVICE_PORT' },
  ]);
  assert.deepEqual([editDistance('kitten', 'sitting'), editDistance('', 'abc'), editDistance('same', 'same')], [3, 3, 0]);
});

test('the environment reference covers every variable the service reads, with the schema defaults; the configuration guide carries the same table', async () => {
  const rows = envReference();
  const names = rows.map((r) => r.name);
  assert.equal(new Set(names).size, names.length, 'each variable once');
  for (const f of CONFIG_FIELDS) assert.ok(names.includes(ENV_VARS[f]), ENV_VARS[f]);
  for (const f of FLAGS) if (flagEnv(f)) assert.ok(names.includes(flagEnv(f)!), f.name);
  const defaults = defaultRouterConfig();
  for (const f of CONFIG_FIELDS) {
    const row = rows.find((r) => r.name === ENV_VARS[f])!;
    assert.equal(row.default, defaults[f] === null ? 'unset' : String(defaults[f]), f);
    assert.ok(row.meaning.length > 10 && row.type.length > 0, f);
  }
  assert.deepEqual(rows.find((r) => r.name === 'DYN_ROUTER_QUEUE_POLICY'), {
    name: 'DYN_ROUTER_QUEUE_POLICY', type: 'fcfs|lcfs|wspt', default: 'fcfs', meaning: rows.find((r) => r.name === 'DYN_ROUTER_QUEUE_POLICY')!.meaning });
  const readme = await readFile(join(dirname(fileURLToPath(import.meta.url)), '../../../../../docs/configuration.md'), 'utf8');
  const block = /<!-- env-reference:start[^>]*-->\n([\s\S]*?)\n<!-- env-reference:end -->/.exec(readme);
  assert.ok(block, 'docs/configuration.md has the generated block');
  assert.equal(block[1], envMarkdown(), 'the docs/configuration.md table is `select-service --help-env` as Markdown (regenerate it from envMarkdown())');
});

/**
 * The `select-service` flags (Dynamo's plus the service's own): one table drives parsing, the
 * `--help` text and docs/configuration.md's flag table. `--flag value` and `--flag=value` both work.
 * Every flag that takes a value (except the router overrides, which have their DYN_ROUTER_*
 * variable) is also read from `SELECT_SERVICE_<FLAG>` (`--port` -> `SELECT_SERVICE_PORT`), for
 * container platforms; the flag wins. Parsing checks syntax and types and lists every problem
 * at once; ranges owned by the router config schema (`--router-tracking-hash`) and the service
 * builder (ports, affinity TTL) are checked there, with messages that name the same flags.
 *
 * The environment reference (`--help-env`, the table in docs/configuration.md) is generated here too, from this
 * table and the router configuration's variable table.
 */
import { DEFAULT_KV_TURN_MS, DEFAULT_MAX_MESSAGE_BYTES, MAX_KV_TURN_MS, MIN_KV_TURN_MS } from './service/kv-events/ingress.js';
import { LIMITS, defaultRouterConfig, type RouterConfig } from './core/config/config.js';
import { routerEnvNames, unknownEnvVars } from './core/config/config-env.js';
import { routerEnvDocs } from './core/config/config-env-docs.js';
import { validateZmqEndpoint } from './service/zmq-endpoint.js';
import { MAX_DIGEST_MS, MIN_DIGEST_MS, replicaLimitRange, type ReplicaSyncLimits } from './service/replica-limits.js';

const REPLICA_LIMIT_KEYS: readonly (keyof ReplicaSyncLimits)[] = ['digestIntervalMs', 'sendHwm', 'receiveHwm', 'readyTimeoutSecs', 'tombstoneTtlSecs', 'maxTombstones'];
import { wrapText, wrapWords } from './cli-text.js';

/** Pino levels accepted by `--log-level`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Validated, frozen command-line options. */
export interface CliOptions {
  readonly help: boolean;
  readonly helpEnv: boolean;
  readonly version: boolean;
  readonly port: number;
  readonly host: string;
  readonly threads: number | null;
  readonly indexerPeers: readonly string[];
  readonly replicaSyncPort: number | null;
  readonly replicaSyncPeers: readonly string[];
  /** `--replica-sync-*` limits given (absent = the mesh's defaults). */
  readonly replicaSyncLimits: Readonly<Partial<ReplicaSyncLimits>>;
  readonly selectionCache: { readonly ttlSecs?: number; readonly maxEntries?: number; readonly maxBytes?: number };
  readonly assumeKvReuse: boolean | null;
  readonly trackingHash: string | null;
  readonly trackingKeyFile: string | null;
  readonly trackingKeyId: string | null;
  readonly sessionAffinity: { readonly ttlSecs: number; readonly mode: 'hard' | 'soft' } | null;
  readonly logLevel: LogLevel;
  readonly workersFile: string | null;
  /** KV-feed health window, seconds (null: the service's default, 30). */
  readonly kvFeedSilenceSecs: number | null;
  readonly routingPolicy: string | null;
  /** KV-event messages above this size are dropped and counted. */
  readonly kvEventsMaxMessageBytes: number;
  /** Busy time KV-event ingestion may hold the event loop before selections get a turn, ms (null: the service's default). */
  readonly kvEventsTurnMs: number | null;
  /** `--max-*` capacity limits given (absent = the core's defaults). */
  readonly limits: { readonly maxPromptBlocks?: number; readonly maxBookings?: number; readonly maxPartitions?: number };
  readonly requestTimeoutMs: number;
  readonly connectionTimeoutMs: number;
  readonly authTokenFile: string | null;
  readonly allowedEndpoints: readonly string[];
}

/** Invalid command line; `problems` holds one line per problem, each naming its flag. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(readonly problems: readonly string[]) { super(`invalid command line:\n${problems.map((p) => `  - ${p}`).join('\n')}`); }
}

/**
 * The service could not start for a reason the user fixes with a flag (a port in use, a
 * privileged port, an address not of this machine): one plain line on stderr, exit 1.
 */
export class StartError extends Error {
  override readonly name = 'StartError';
}

interface Flag { name: string; value?: string; default: string; help: string }

/** Prefix of the flags' environment equivalents. */
export const ENV_PREFIX = 'SELECT_SERVICE_';

/** The variable a flag is also read from (`--port` -> `SELECT_SERVICE_PORT`), or null. */
export function flagEnv(f: Flag): string | null {
  if (!f.value || f.default === 'env') return null; // switches, and overrides of a DYN_ROUTER_* variable
  return ENV_PREFIX + f.name.slice(2).replace(/-/g, '_').toUpperCase();
}

/** Every flag, in `--help` order. */
export const FLAGS: readonly Flag[] = [
  { name: '--port', value: 'N', default: '8092', help: 'HTTP port (0 = any free port; the bound port is logged)' },
  { name: '--host', value: 'ADDR', default: '0.0.0.0', help: 'HTTP bind address' },
  { name: '--threads', value: 'N', default: '4', help: 'accepted for compatibility; the index runs on one thread' },
  { name: '--indexer-peers', value: 'URLS', default: 'none', help: 'comma-separated HTTP base URLs to recover the index from at start-up' },
  { name: '--replica-sync-port', value: 'PORT', default: 'none', help: 'replica sync: bind a ZMQ PUB on tcp://*:PORT (1-65535)' },
  { name: '--replica-sync-peers', value: 'ENDPOINTS', default: 'none', help: 'comma-separated ZMQ endpoints of peer replicas; needs --replica-sync-port' },
  { name: '--replica-sync-digest-ms', value: 'MS', default: String(LIMITS.replicaDigestIntervalMs),
    help: `anti-entropy: publish a digest of the bookings held this often (${MIN_DIGEST_MS}-${MAX_DIGEST_MS}); peers repair what differs` },
  { name: '--replica-sync-send-hwm', value: 'N', default: String(LIMITS.replicaSendHwm), help: 'replica messages queued per peer on send (ZMQ_SNDHWM); beyond, the newest are dropped and counted' },
  { name: '--replica-sync-receive-hwm', value: 'N', default: String(LIMITS.replicaReceiveHwm), help: 'replica messages queued per peer on receipt (ZMQ_RCVHWM)' },
  { name: '--replica-sync-ready-timeout-secs', value: 'SECS', default: String(LIMITS.replicaReadyTimeoutSecs),
    help: 'after start-up, /ready waits at most this long (from the first worker registered) for every peer to be meshed both ways (0 = no wait)' },
  { name: '--replica-sync-tombstone-secs', value: 'SECS', default: String(LIMITS.replicaTombstoneTtlSecs),
    help: 'how long freed booking ids are remembered (a free that overtakes its booking or that a peer missed still frees it)' },
  { name: '--replica-sync-max-tombstones', value: 'N', default: String(LIMITS.replicaMaxTombstones), help: 'freed booking ids remembered at most' },
  { name: '--selection-cache-ttl-secs', value: 'SECS', default: '120', help: 'pending-selection cache TTL' },
  { name: '--selection-cache-max-entries', value: 'N', default: '4096', help: 'pending-selection cache entry limit' },
  { name: '--selection-cache-max-bytes', value: 'N', default: '268435456', help: 'pending-selection cache byte budget' },
  { name: '--router-assume-kv-reuse', default: 'env', help: 'override DYN_ROUTER_ASSUME_KV_REUSE to true' },
  { name: '--no-router-assume-kv-reuse', default: 'env', help: 'override DYN_ROUTER_ASSUME_KV_REUSE to false' },
  { name: '--router-tracking-hash', value: 'NAME', default: 'env', help: 'public-xxh3-v1 or keyed-xxh3-v1' },
  { name: '--router-tracking-key-file', value: 'PATH', default: 'env', help: '32-byte key file (keyed-xxh3-v1)' },
  { name: '--router-tracking-key-id', value: 'ID', default: 'env', help: 'key epoch id (keyed-xxh3-v1)' },
  { name: '--session-affinity-ttl-secs', value: 'SECS', default: 'off', help: 'enable session affinity with this idle TTL (1-31536000)' },
  { name: '--session-affinity-mode', value: 'MODE', default: 'hard', help: 'hard or soft (needs --session-affinity-ttl-secs)' },
  { name: '--log-level', value: 'LEVEL', default: 'info', help: LOG_LEVELS.join(', ') },
  { name: '--workers-file', value: 'PATH', default: 'none', help: 'JSON array of worker records to keep the catalog in sync with' },
  { name: '--kv-feed-silence-secs', value: 'SECS', default: '30', help: 'KV-feed health window: warn about a rank not connected, disconnected or silent this long' },
  { name: '--routing-policy', value: 'NAME', default: 'env', help: 'kv (Dynamo\'s cost, the default), ttft, llmd (llm-d\'s scheduler), sglang_cache_aware (SGLang\'s router) or ray_prefix_affinity (Ray Serve LLM\'s), as NAME[:name=value...]; overrides SELECT_SERVICE_ROUTING_POLICY' },
  { name: '--kv-events-max-message-bytes', value: 'N', default: '67108864', help: 'KV-event messages above this size are dropped (and counted)' },
  { name: '--kv-events-turn-ms', value: 'MILLIS', default: String(DEFAULT_KV_TURN_MS),
    help: `busy time KV-event ingestion may hold the event loop before selections get a turn (${MIN_KV_TURN_MS}-${MAX_KV_TURN_MS}; shorter: lower selection latency, less ingestion throughput)` },
  { name: '--max-prompt-blocks', value: 'N', default: `${LIMITS.defaultMaxPromptBlocks} (${LIMITS.defaultMaxPromptBlocksRecorded} when bookings are indexed)`,
    help: 'blocks one prompt may have (422 above)' },
  { name: '--max-bookings', value: 'N', default: String(LIMITS.defaultMaxBookings), help: 'live bookings across partitions (429 at the cap)' },
  { name: '--max-partitions', value: 'N', default: String(LIMITS.wasmIndexHandles),
    help: `partitions at once (429 at the cap; at most ${LIMITS.wasmIndexHandles}, ${LIMITS.wasmIndexHandles / 2} with DYN_ROUTER_PREDICTED_TTL_SECS)` },
  { name: '--request-timeout-ms', value: 'MS', default: String(LIMITS.requestTimeoutMs), help: 'a request must arrive in full within this (408 after; 0 = no limit)' },
  { name: '--connection-timeout-ms', value: 'MS', default: String(LIMITS.connectionTimeoutMs), help: 'close a socket idle this long, also while its selection queues (0 = never)' },
  { name: '--auth-token-file', value: 'PATH', default: 'none',
    help: 'require Authorization: Bearer <token> (one token per line; re-read on change and SIGHUP)' },
  { name: '--allowed-endpoints', value: 'LIST', default: 'all',
    help: 'comma-separated host patterns, CIDR blocks and ipc:// prefixes the service may connect to' },
  { name: '--help', default: '', help: 'print this help and exit (also -h)' },
  { name: '--help-env', default: '', help: 'print every environment variable the service reads, with type, default and meaning, and exit' },
  { name: '--version', default: '', help: 'print the version and exit (also -V)' },
];

const ALIASES: Readonly<Record<string, string>> = { '-h': '--help', '-V': '--version' };

/** The `--help` text: each flag's help in a column, wrapped at 100 columns (`[default: ...]` and `[env: ...]` kept whole). */
export function usage(): string {
  const left = (f: Flag) => (f.value ? `${f.name} ${f.value}` : f.name);
  const width = Math.max(...FLAGS.map((f) => left(f).length));
  const lines = FLAGS.flatMap((f) => {
    const env = flagEnv(f);
    const words = [...f.help.split(' ')];
    if (f.default && f.default !== 'env') words.push(`[default: ${f.default}]`);
    if (env) words.push(`[env: ${env}]`);
    return wrapWords(`  ${left(f).padEnd(width)}  `, words);
  });
  return ['usage: select-service [OPTIONS]', '       select-service simulate [ARGS...]', '',
    wrapText('Router behaviour is configured with the DYN_ROUTER_* environment variables (select-service --help-env lists them all).'),
    wrapText(`Flags with a value can also be set as ${ENV_PREFIX}<FLAG> variables; a flag given on the command line wins.`),
    '', 'options:', ...lines].join('\n');
}

// ---- the environment reference ---------------------------------------------------------------

/** One variable of the environment reference. */
export interface EnvReferenceRow { name: string; type: string; default: string; meaning: string }

/** Value placeholders of the flags -> the type of their variable. */
const VALUE_TYPES: Readonly<Record<string, string>> = {
  N: 'integer', PORT: 'integer', SECS: 'number', MS: 'integer (ms)', MILLIS: 'number (ms)', ADDR: 'string', PATH: 'path', URLS: 'comma-separated URLs',
  LIST: 'comma-separated list',
  ENDPOINTS: 'comma-separated ZMQ endpoints', MODE: 'hard|soft', LEVEL: LOG_LEVELS.join('|'),
};

const showDefault = (v: unknown): string => (v === null || v === undefined ? 'unset' : String(v));

/**
 * Every environment variable the service reads: the flags' `SELECT_SERVICE_*` equivalents, then
 * the router configuration's variables (defaults from the configuration schema).
 */
export function envReference(): EnvReferenceRow[] {
  const rows: EnvReferenceRow[] = [];
  for (const f of FLAGS) {
    const name = flagEnv(f);
    if (!name) continue;
    const def = f.default === 'none' ? 'unset' : f.default === 'off' ? 'unset (off)' : f.default;
    rows.push({ name, type: VALUE_TYPES[f.value!] ?? 'string', default: def, meaning: `same as ${f.name}: ${f.help}` });
  }
  const defaults = defaultRouterConfig();
  for (const d of routerEnvDocs()) {
    rows.push({ name: d.name, type: d.type, default: d.field ? showDefault(defaults[d.field]) : 'unset', meaning: d.help });
  }
  return rows;
}

/** The `--help-env` text (the rows of {@link envReference}, wrapped at 100 columns). */
export function envHelp(): string {
  const lines = [wrapText('Environment variables read by select-service. A flag on the command line wins over its SELECT_SERVICE_* variable; '
    + 'an empty variable counts as unset; a DYN_* value that does not parse stops the start (exit 2).'), ''];
  for (const r of envReference()) lines.push(wrapText(`(${r.type}, default: ${r.default})`, `${r.name}  `, 4), wrapText(r.meaning, '    '));
  return lines.join('\n');
}

/** docs/configuration.md's environment table (the same rows as `--help-env`). */
export function envMarkdown(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  return ['| variable | type | default | meaning |', '|---|---|---|---|',
    ...envReference().map((r) => `| \`${r.name}\` | ${cell(r.type)} | ${r.default.startsWith('unset') ? r.default : `\`${r.default}\``} | ${cell(r.meaning)} |`)].join('\n');
}

/** Start-up warnings for variables of our namespaces that nothing reads, naming the closest known one. */
export function unknownEnvWarnings(env: Readonly<Record<string, string | undefined>>): { name: string; closest: string }[] {
  // every name something reads: the router configuration's (some are SELECT_SERVICE_*, e.g.
  // SELECT_SERVICE_ROUTING_POLICY) and the flags'
  const known = [...routerEnvNames(), ...FLAGS.map(flagEnv).filter((n): n is string => n !== null)];
  return [...unknownEnvVars(env, 'DYN_ROUTER_', known), ...unknownEnvVars(env, ENV_PREFIX, known)];
}

/** Splits argv into flag -> raw value (`true` for switches), reporting syntax problems. */
function tokenize(argv: readonly string[], problems: string[]): Map<string, string | true> {
  const known = new Map(FLAGS.map((f) => [f.name, f]));
  const seen = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = ALIASES[arg] ?? (eq > 0 ? arg.slice(0, eq) : arg);
    const flag = known.get(name);
    if (!flag) { problems.push(arg.startsWith('-') ? `${name}: unknown option` : `unexpected argument ${JSON.stringify(arg)}`); continue; }
    let value: string | true = true;
    if (flag.value) {
      if (eq > 0) value = arg.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) value = argv[++i];
      else { problems.push(`${name}: needs a value (${flag.value})`); continue; }
    } else if (eq > 0) { problems.push(`${name}: takes no value`); continue; }
    if (seen.has(name)) problems.push(`${name}: given more than once`);
    seen.set(name, value);
  }
  return seen;
}

/**
 * Parses the command line (without the node and script paths), with the `SELECT_SERVICE_*`
 * variables of `env` for the flags it does not give. Throws {@link CliError}; a problem with a
 * value that came from the environment names the variable.
 */
export function parseCliArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): CliOptions {
  const problems: string[] = [];
  const raw = tokenize(argv, problems);
  const from = new Map<string, string>();
  for (const f of FLAGS) {
    const name = flagEnv(f);
    const v = name === null || raw.has(f.name) ? undefined : env[name];
    if (v !== undefined && v !== '') { raw.set(f.name, v); from.set(f.name, name!); }
  }
  /** How a problem names where the value came from. */
  const who = (name: string): string => from.get(name) ?? name;
  const str = (name: string): string | null => { const v = raw.get(name); return typeof v === 'string' ? v : null; };
  const num = (name: string, integer: boolean, min: number, max = Number.MAX_SAFE_INTEGER): number | null => {
    const v = str(name);
    if (v === null) return null;
    const n = v.trim() === '' ? NaN : Number(v);
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      problems.push(`${who(name)}: must be ${integer ? 'an integer' : 'a number'} between ${min} and ${max} (got ${JSON.stringify(v)})`);
      return null;
    }
    return n;
  };
  const list = (name: string): string[] => (str(name) ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);

  const indexerPeers = list('--indexer-peers');
  for (const u of indexerPeers) {
    if (!URL.canParse(u) || !/^https?:$/.test(new URL(u).protocol)) problems.push(`${who('--indexer-peers')}: not an http(s) URL: ${JSON.stringify(u)}`);
  }
  const replicaSyncPeers = list('--replica-sync-peers');
  for (const ep of replicaSyncPeers) {
    const why = validateZmqEndpoint(ep);
    if (why) problems.push(`${who('--replica-sync-peers')}: invalid ZMQ endpoint \`${ep}\`: ${why}`);
  }
  // Ports: 0 and out-of-range replica ports are the builder's to reject (same message, same flag).
  const replicaSyncPort = num('--replica-sync-port', true, Number.MIN_SAFE_INTEGER);
  const meshLimits: Partial<Record<keyof ReplicaSyncLimits, number>> = {};
  for (const k of REPLICA_LIMIT_KEYS) {
    const [flag, min, max, integer] = replicaLimitRange(k);
    const v = num(flag, integer, min, max);
    if (v !== null) meshLimits[k] = v;
  }
  for (const k of REPLICA_LIMIT_KEYS) {
    const flag = replicaLimitRange(k)[0];
    if (raw.has(flag) && !raw.has('--replica-sync-port')) problems.push(`${who(flag)}: requires --replica-sync-port`);
  }
  if (replicaSyncPeers.length > 0 && !raw.has('--replica-sync-port')) problems.push(`${who('--replica-sync-peers')}: requires --replica-sync-port`);
  if (raw.has('--router-assume-kv-reuse') && raw.has('--no-router-assume-kv-reuse')) {
    problems.push('--router-assume-kv-reuse: cannot be used with --no-router-assume-kv-reuse');
  }
  const ttl = num('--session-affinity-ttl-secs', false, Number.MIN_SAFE_INTEGER);
  const mode = str('--session-affinity-mode');
  if (mode !== null && mode !== 'hard' && mode !== 'soft') problems.push(`${who('--session-affinity-mode')}: must be hard or soft (got ${JSON.stringify(mode)})`);
  if (mode !== null && !raw.has('--session-affinity-ttl-secs')) problems.push(`${who('--session-affinity-mode')}: requires --session-affinity-ttl-secs`);
  const logLevel = str('--log-level') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) problems.push(`${who('--log-level')}: must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevel)})`);
  const host = str('--host') ?? '0.0.0.0';
  if (host.trim() === '') problems.push(`${who('--host')}: must not be empty`);
  const cache = {
    ttlSecs: num('--selection-cache-ttl-secs', false, 0) ?? undefined,
    maxEntries: num('--selection-cache-max-entries', true, 0) ?? undefined,
    maxBytes: num('--selection-cache-max-bytes', true, 0) ?? undefined,
  };
  const silence = num('--kv-feed-silence-secs', false, 0);
  if (silence === 0) problems.push('--kv-feed-silence-secs: must be greater than 0 (got "0")');
  const limits = {
    maxPromptBlocks: num('--max-prompt-blocks', true, 1, LIMITS.maxPromptItems) ?? undefined,
    maxBookings: num('--max-bookings', true, 1) ?? undefined,
    maxPartitions: num('--max-partitions', true, 1, LIMITS.wasmIndexHandles) ?? undefined,
  };
  const authTokenFile = str('--auth-token-file');
  if (authTokenFile !== null && authTokenFile.trim() === '') problems.push(`${who('--auth-token-file')}: must not be empty`);
  const opts: CliOptions = {
    help: raw.has('--help'),
    helpEnv: raw.has('--help-env'),
    version: raw.has('--version'),
    port: num('--port', true, 0, 65535) ?? 8092,
    host,
    threads: num('--threads', true, 1),
    indexerPeers,
    replicaSyncPort,
    replicaSyncPeers,
    replicaSyncLimits: meshLimits,
    selectionCache: Object.fromEntries(Object.entries(cache).filter(([, v]) => v !== undefined)),
    assumeKvReuse: raw.has('--router-assume-kv-reuse') ? true : raw.has('--no-router-assume-kv-reuse') ? false : null,
    trackingHash: str('--router-tracking-hash'),
    trackingKeyFile: str('--router-tracking-key-file'),
    trackingKeyId: str('--router-tracking-key-id'),
    sessionAffinity: ttl === null ? null : { ttlSecs: ttl, mode: mode === 'soft' ? 'soft' : 'hard' },
    logLevel: logLevel as LogLevel,
    workersFile: str('--workers-file'),
    kvFeedSilenceSecs: silence,
    routingPolicy: str('--routing-policy'),
    kvEventsMaxMessageBytes: num('--kv-events-max-message-bytes', true, 1) ?? DEFAULT_MAX_MESSAGE_BYTES,
    kvEventsTurnMs: num('--kv-events-turn-ms', false, MIN_KV_TURN_MS, MAX_KV_TURN_MS),
    limits: Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)),
    requestTimeoutMs: num('--request-timeout-ms', true, 0, 2 ** 31 - 1) ?? LIMITS.requestTimeoutMs,
    connectionTimeoutMs: num('--connection-timeout-ms', true, 0, 2 ** 31 - 1) ?? LIMITS.connectionTimeoutMs,
    authTokenFile,
    allowedEndpoints: list('--allowed-endpoints'),
  };
  if (problems.length > 0) throw new CliError(problems);
  return Object.freeze(opts);
}

/** The router-config fields the flags override (applied through the config schema, which names the flag on error). */
export function routerOverrides(o: CliOptions): Partial<RouterConfig> {
  const out: { -readonly [K in keyof RouterConfig]?: RouterConfig[K] } = {};
  if (o.assumeKvReuse !== null) out.routerAssumeKvReuse = o.assumeKvReuse;
  if (o.trackingHash !== null) out.routerTrackingHash = o.trackingHash as RouterConfig['routerTrackingHash'];
  if (o.trackingKeyFile !== null) out.routerTrackingKeyFile = o.trackingKeyFile;
  if (o.trackingKeyId !== null) out.routerTrackingKeyId = o.trackingKeyId;
  if (o.routingPolicy !== null) out.routingPolicy = o.routingPolicy;
  return out;
}
